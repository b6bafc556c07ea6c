"""volumesvc-cluster: a several-host deployment on one machine.

What ``tools/dev.sh cluster`` runs. Where the all-in-one puts every process
on loopback, this lays the services out the way
``doc/source/install/multi-host.rst`` puts them on separate machines:

* a bridge with a private /24 (``volumesvc_aio.netns``); the control plane
  listens on the bridge's address in the root namespace;
* a 3-node RabbitMQ cluster (own node names, ports, data dirs; quorum queues)
  next to the machine's default node, which is left alone;
* volumesvc's database on a server of its own (``--database``: PostgreSQL,
  the default, or MariaDB; its data directory in the state dir, another
  port), Cinder's and Glance's on a second PostgreSQL server;
* Keystone (``--auth keystone``, the default): every API validates tokens,
  and volumesvc sends service tokens to Cinder and Barbican, as the
  all-in-one does;
* a one-node Ceph whose monitor and OSD listen on the bridge address, so
  every host opens the same RBD volumes;
* Barbican, Glance (images on RBD) and Cinder (backends ``rbd``, the default
  type, and ``file``, each with a ``-luks`` type), the all-in-one's harnesses
  bound to the bridge address, Cinder calling back through the load balancer;
* two conductors, two API nodes (each its own gunicorn) behind HAProxy,
  which health-checks ``/healthcheck``;
* TLS on every link of volumesvc's: the start makes a CA in the state dir
  (``tls/ca.pem``, ``volumesvc_aio.tls``); the RabbitMQ nodes have a TLS
  listener only, volumesvc's PostgreSQL takes ``hostssl`` connections only,
  the API nodes serve HTTPS and HAProxy ends the clients' TLS and
  re-encrypts to them; every client (volumesvc's services, Cinder, the
  tests) verifies the servers against that CA. Keystone, Glance, Barbican,
  Cinder's API and the services' PostgreSQL stay on plain HTTP/TCP in the
  private subnet;
* volumesvc's services (API nodes, conductors, computes) run as the
  ``volumesvc`` system user, as the units run them (a member of the
  ``libvirt`` group, which the hosts' daemons give their socket to); only
  the computes' privsep daemons are root, started through sudo with one
  rule per context and compute (``/etc/sudoers.d/volumesvc-cluster-<prefix>``);
* three computes, each in its own network namespace with its own address
  and ``my_ip``, and its own libvirt daemon there (own sockets, state and
  host UUID, listening on TCP on the host's address for its peers: what a
  live migration between two hosts needs), reaching everything over the
  bridge. ``--compute-driver fake``: the same processes on the fake driver,
  no guests, no libvirt daemons and no Ceph (the file backend), for storms
  of more servers than the machine could run.

``stop`` (or Ctrl-C/SIGTERM of ``start``) stops every process, the QEMU
guests and the libvirt daemons, and deletes the namespaces and links; it
also cleans what a SIGKILLed run left behind.
"""

import argparse
import contextlib
import os
import secrets
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import time

import volumesvc_aio as harness_util
from volumesvc import binaries
from volumesvc_aio import cluster_db, haproxy, netns, rabbit, system, tls
from volumesvc_aio import config as aio_config
from volumesvc_aio.cluster_config import (
    ClusterBarbican,
    ClusterCinder,
    ClusterGlance,
    ClusterKeystone,
    compute_config_path,
    write_api_config,
    write_cluster_config,
    write_compute_config,
    write_conductor_config,
)
from volumesvc_aio.cmd import _secret_uuid

DEFAULT_STATE_DIR = "/var/lib/volumesvc-cluster"
# Fixed ports on the bridge address (the machine's own services keep
# theirs). Two deployments on one machine (the cluster tier's PostgreSQL
# and MariaDB ones, if they ever overlapped) would still collide on the
# RabbitMQ distribution ports (AMQP port + 20000, every interface), so each
# deployment adds its ``port_offset`` to all of them.
LB_PORT = 18774
API_PORTS = (18781, 18782)
VOLUME_PORT = 18776
IMAGE_PORT = 19292
KEY_MANAGER_PORT = 19311
IDENTITY_PORT = 15000
RABBIT_PORTS = (5701, 5702, 5703)
PG_PORT = 5442
SERVICES_PG_PORT = 5443
MARIADB_PORT = 3316
DATABASES = ("postgresql", "mariadb")
COMPUTE_DRIVERS = ("libvirt", "fake")
AUTHS = ("keystone", "noauth2")
SUDOERS_DIR = "/etc/sudoers.d"


def sudoers_path(prefix):
    """The sudoers drop-in of the deployment named by ``prefix`` (no dot: sudo would skip it)."""
    return os.path.join(SUDOERS_DIR, f"volumesvc-cluster-{prefix}")


class Cluster:
    """Owns every process of the deployment, by name (``api-1``, ``compute-2``...).

    The fault tests use :meth:`kill` and :meth:`respawn` on those names.
    """

    def __init__(self, state_dir=DEFAULT_STATE_DIR, *, computes=3, apis=2, conductors=2,
                 prefix="vsc", subnet=netns.DEFAULT_SUBNET, database="postgresql",
                 compute_driver="libvirt", port_offset=0, auth="keystone", log=print):
        if compute_driver not in COMPUTE_DRIVERS:
            raise ValueError(f"unknown compute driver {compute_driver!r}")
        if auth not in AUTHS:
            raise ValueError(f"unknown auth {auth!r}")
        self.auth = auth
        self.state_dir = os.path.abspath(state_dir)
        self.database = database
        self.compute_driver = compute_driver
        self.port_offset = port_offset
        self.lb_port = LB_PORT + port_offset
        self.api_ports = tuple(API_PORTS[0] + port_offset + n for n in range(apis))
        self.net = netns.Network(prefix, subnet)
        self.address = self.net.bridge_address
        self.hosts = [f"{prefix}-compute-{n}" for n in range(1, computes + 1)]
        self.api_names = [f"api-{n}" for n in range(1, apis + 1)]
        self.conductor_names = [f"conductor-{n}" for n in range(1, conductors + 1)]
        self.procs = {}
        self.harnesses = []
        self.rabbit_nodes = [rabbit.ClusterNode(self.state_dir, f"{prefix}-rabbit-{n}",
                                                self.address, port + port_offset)
                             for n, port in enumerate(RABBIT_PORTS, 1)]
        # volumesvc's own database server (``db_server.name`` is the process
        # the database restart fault stops: "postgresql" or "mariadb").
        self.db_server = cluster_db.server_for(
            database, self.state_dir, self.address,
            (PG_PORT if database == "postgresql" else MARIADB_PORT) + port_offset,
            str(self.net.subnet))
        # Cinder's and Glance's databases live on a second server, so that
        # restarting volumesvc's database (a fault the tests inject) is that
        # alone.
        self.services_db = cluster_db.PostgresServer(
            self.state_dir, self.address, SERVICES_PG_PORT + port_offset, str(self.net.subnet),
            name="postgresql-services")
        self.conf_path = os.path.join(self.state_dir, "volumesvc.conf")
        self.extra_confs = {}
        self.lb_url = f"https://{self.address}:{self.lb_port}"
        # The deployment's CA (made by start) and the API's certificate.
        self.authority = None
        self.api_tls = None
        #: The user volumesvc's services run as; what it alone may read
        #: (the API's key, the Ceph keyring) is copied for it here.
        self.service_user = system.SERVICE_USER
        self.service_dir = os.path.join(self.state_dir, "volumesvc-files")
        self.sudoers = sudoers_path(prefix)
        self.cinder = None
        self.glance = None
        self.barbican = None
        self.keystone = None
        # Real guests need a hypervisor per host and storage every host opens.
        self.ceph = None
        self.libvirtds = {}
        self.rbd = None
        self._log_fn = log
        self._started = time.monotonic()

    # -- logging ---------------------------------------------------------------
    def log(self, message):
        self._log_fn(f"volumesvc-cluster: [{time.monotonic() - self._started:6.1f}s] "
                     f"{message}")

    def log_path(self, name):
        return os.path.join(self.state_dir, "logs", f"{name}.log")

    # -- processes -------------------------------------------------------------
    def _spawn(self, name, argv, env=None):
        child = harness_util.ProcessGroup(name, argv, self.log_path(name), env=env,
                                          die_with_parent=True)
        self.procs[name] = child.start()
        return child

    def _service_argv(self, binary, *confs):
        """``binary`` with ``confs``, as the services' user.

        ``--pdeathsig`` again after the user change, which clears the one
        the process group was started with. Run with :meth:`_service_env`.
        """
        exe = os.path.join(os.path.dirname(sys.executable), binary)
        argv = ["setpriv", f"--reuid={self.service_user}", f"--regid={self.service_user}",
                "--init-groups", "--pdeathsig", "TERM", exe if os.path.exists(exe) else binary]
        for conf in confs:
            argv += ["--config-file", conf]
        return argv

    def _service_env(self):
        """The services' environment: ours, with ``HOME`` the user's directory.

        Not root's: libpq looks there for a client certificate and fails on
        a directory it may not enter.
        """
        return dict(os.environ, HOME=self.service_dir)

    def _privsep_helper(self, host):
        """The command a compute on ``host`` starts its privsep daemons with (sudo's rule).

        The daemon runs the compute's code: its Python, its configuration
        files and, when set, its ``PYTHONPATH`` (sudo clears the environment).
        """
        argv = [sys.executable, "-m", "oslo_privsep.daemon", "--config-file", self.conf_path,
                "--config-file", compute_config_path(self.state_dir, host)]
        if os.environ.get("PYTHONPATH"):
            argv = ["/usr/bin/env", f"PYTHONPATH={os.environ['PYTHONPATH']}", *argv]
        return shlex.join(argv)

    def _make_service_dir(self):
        os.makedirs(self.service_dir, mode=0o700, exist_ok=True)
        shutil.chown(self.service_dir, self.service_user, self.service_user)

    def _for_service_user(self, path):
        """A copy of ``path`` in the service user's directory, readable by it (only)."""
        self._make_service_dir()
        copy = os.path.join(self.service_dir, os.path.basename(path))
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o600)
        shutil.chown(copy, self.service_user, self.service_user)
        return copy

    def argv_of(self, name):
        """The command line of a volumesvc process of the deployment, by name."""
        if name.startswith("conductor-"):
            return self._service_argv(binaries.CONDUCTOR, self.conf_path,
                                      self.extra_confs[name])
        if name.startswith("api-"):
            return self._service_argv(binaries.API, self.conf_path, self.extra_confs[name])
        if name.startswith("compute-"):
            host = self.hosts[int(name.split("-")[1]) - 1]
            return self.net.exec_argv(host, self._service_argv(
                binaries.COMPUTE, self.conf_path, self.extra_confs[name]))
        raise KeyError(name)

    def kill(self, name, signum=signal.SIGKILL):
        """Signal one process group of the deployment and wait for it to exit."""
        child = self.procs[name]
        child.signal(signum)
        with contextlib.suppress(Exception):
            child.proc.wait(60)

    def respawn(self, name):
        """Start a process that was killed again, same command line and log."""
        self.procs[name].start()

    # -- start -----------------------------------------------------------------
    def start(self, ready_timeout=600.0):
        fresh = not os.path.exists(os.path.join(self.state_dir, "volumesvc.conf"))
        os.makedirs(os.path.join(self.state_dir, "logs"), exist_ok=True)
        system.ensure_system()
        system.ensure_service_user(self.service_user)
        self._make_service_dir()
        system.apt_install(["haproxy"])
        self._make_authority()
        self.log("network: bridge and one namespace per compute")
        self.net.setup_bridge()
        for index, host in enumerate(self.hosts, 1):
            self.net.add_host(host, index)
        if self.compute_driver == "libvirt":
            self._start_hypervisors_and_storage(fresh, ready_timeout)
        self._start_databases(fresh)
        transport_url = self._start_rabbit()
        if self.auth == "keystone":
            self._start_keystone(ready_timeout)
        self._start_image_and_volume(transport_url, fresh, ready_timeout)
        self._start_volumesvc(transport_url, ready_timeout)
        self.log("uploading the starter image")
        aio_config.ensure_image(self.glance.url, self.state_dir, log=self.log,
                                token=self.keystone.token() if self.keystone else None)
        return self

    def _make_authority(self):
        """A new CA in the state dir, handed to the servers that speak TLS.

        Every start makes its own: each server's certificate is issued again
        when it is configured, so no certificate outlives its CA.
        """
        directory = os.path.join(self.state_dir, "tls")
        # The CA's certificate is for everyone; the keys in it are root's.
        os.makedirs(directory, mode=0o755, exist_ok=True)
        self.authority = tls.Authority(directory, name="volumesvc-cluster CA", days=30)
        for node in self.rabbit_nodes:
            node.authority = self.authority
        if isinstance(self.db_server, cluster_db.PostgresServer):
            self.db_server.authority = self.authority
        self.api_tls = self.authority.issue("volumesvc-api", ip=self.address)

    @property
    def ca_file(self):
        """The CA file every client of the deployment's TLS links verifies against."""
        return self.authority.ca_file if self.authority is not None else None

    def ssl_context(self):
        """An SSL context that trusts the deployment's CA only (for its HTTPS API)."""
        return ssl.create_default_context(cafile=self.ca_file)

    def _start_hypervisors_and_storage(self, fresh, timeout):
        """A libvirt daemon in each host's namespace and a Ceph on the bridge (about 30 s)."""
        from volumesvc_aio import ceph, libvirtd

        system.apt_install(ceph.PACKAGES)
        self.log("libvirt daemons (one per host) and Ceph on the bridge address")
        for host in self.hosts:
            ns, address = self.net.hosts[host]
            daemon = libvirtd.LibvirtDaemon(
                os.path.join(self.state_dir, "libvirtd", host),
                host=libvirtd.HostLayout(namespace=ns, address=address, host_uuid=(
                    libvirtd.HostLayout.uuid_for(self.state_dir, host))))
            daemon.die_with_parent = True
            daemon.configure()
            daemon.start()
            self.libvirtds[host] = daemon
        self.ceph = ceph.CephHarness(os.path.join(self.state_dir, "ceph"), address=self.address)
        self.ceph.die_with_parent = True
        if fresh:
            self.ceph.configure()
        self.ceph.start()
        self.ceph.wait_ready(timeout)
        for daemon in self.libvirtds.values():
            daemon.wait_ready(timeout)
        self.rbd = {"user": "cinder", "secret_uuid": _secret_uuid(self.state_dir),
                    "keyring": self._for_service_user(self.ceph.keyring("cinder"))}

    def _start_keystone(self, timeout):
        """Keystone on the bridge, provisioned with users, projects and the catalog."""
        self.log("Keystone (the first run installs it from PyPI)")
        self.keystone = ClusterKeystone(os.path.join(self.state_dir, "keystone"),
                                        address=self.address,
                                        port=IDENTITY_PORT + self.port_offset)
        self.keystone.die_with_parent = True
        self.harnesses.append(self.keystone)
        self.keystone.setup(timeout)
        volume_url = f"http://{self.address}:{VOLUME_PORT + self.port_offset}/v3"
        self.keystone.provision({
            "compute": ("nova", f"{self.lb_url}/v2.1"),
            "image": ("glance", f"http://{self.address}:{IMAGE_PORT + self.port_offset}"),
            "volumev3": ("cinderv3", volume_url),
            "block-storage": ("cinder", volume_url),
            "key-manager": ("barbican",
                            f"http://{self.address}:{KEY_MANAGER_PORT + self.port_offset}"),
        })
        self.keystone.write_clouds_yaml(os.path.join(self.state_dir, "clouds.yaml"))

    def token(self):
        """An admin token for the deployment's APIs (noauth2: ``admin:admin``)."""
        return self.keystone.token() if self.keystone is not None else "admin:admin"

    def _start_databases(self, fresh):
        self.log(f"{self.database} on {self.address}:{self.db_server.port} (volumesvc), "
                 f"PostgreSQL on {self.services_db.port} (Cinder, Glance)")
        for server in (self.db_server, self.services_db):
            server.configure()
            self._spawn(server.name, server.argv())
        for server in (self.db_server, self.services_db):
            harness_util.wait_for(lambda s=server: rabbit.port_open(s.address, s.port), 60,
                                  what=server.name, children=[self.procs[server.name]])
        # A server accepts connections a moment after it listens.
        harness_util.wait_for(lambda: self.db_server.create_database("volumesvc", fresh=fresh),
                              60, what=f"{self.database} accepting connections")
        harness_util.wait_for(lambda: self.services_db.create_database("cinder", fresh=fresh),
                              60, what="PostgreSQL (services) accepting connections")

    def _start_rabbit(self):
        self.log("RabbitMQ: three nodes, clustered")
        for node in self.rabbit_nodes:
            node.wait_ports_free()
            node.configure()
            self._spawn(node.nodename.split("@")[0], node.argv(), env=node.env())
        for node in self.rabbit_nodes:
            self._await_rabbit(node)
        for node in self.rabbit_nodes[1:]:
            node.join(self.rabbit_nodes[0])
        password_file = os.path.join(self.state_dir, "rabbit-password")
        if not os.path.exists(password_file):
            with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(secrets.token_hex(16))
        with open(password_file) as f:
            password = f.read().strip()
        rabbit.cluster_user(self.rabbit_nodes[0], ("volumesvc", "cinder"), password)
        return {vhost: rabbit.cluster_transport_url(self.rabbit_nodes, vhost, password)
                for vhost in ("volumesvc", "cinder")}

    def _await_rabbit(self, node, attempts=3):
        """Wait for ``node``; one that exited while booting is started again.

        Why: a node can find its distribution port taken for a moment after
        :meth:`rabbit.ClusterNode.wait_ports_free` saw it free (seen once while
        another test tier ran beside the cluster: "could not bind to
        distribution port", the node gone in a second). RabbitMQ does not
        retry; waiting for the ports and starting the node again does.
        """
        name = node.nodename.split("@")[0]
        for attempt in range(1, attempts + 1):
            try:
                node.await_startup(alive=self.procs[name].running)
                return
            except rabbit.NodeExited:
                if attempt == attempts:
                    raise
            self.log(f"{name} exited while starting (see {self.log_path(name)}); "
                     f"starting it again ({attempt}/{attempts - 1})")
            node.wait_ports_free()
            self.respawn(name)

    def _start_image_and_volume(self, transport_url, fresh, timeout):
        self.log("Barbican, Glance and Cinder (the first run installs them from PyPI)")
        self.barbican = ClusterBarbican(
            os.path.join(self.state_dir, "barbican"), address=self.address,
            port=KEY_MANAGER_PORT + self.port_offset, keystone=self.keystone)
        self.glance = ClusterGlance(
            os.path.join(self.state_dir, "glance"), address=self.address,
            port=IMAGE_PORT + self.port_offset, keystone=self.keystone, ceph=self.ceph,
            database_connection=self.services_db.create_database("glance", fresh=fresh))
        self.cinder = ClusterCinder(
            os.path.join(self.state_dir, "cinder"), address=self.address,
            port=VOLUME_PORT + self.port_offset,
            transport_url=transport_url["cinder"],
            database_connection=self.services_db.url("cinder"), ca_file=self.ca_file,
            nova_endpoint=f"{self.lb_url}/v2.1", glance_url=None, extend_completion=True,
            default_quotas={"volumes": -1, "gigabytes": -1, "snapshots": -1},
            key_manager_url=self.barbican.url, keystone=self.keystone, ceph=self.ceph,
            rbd_secret_uuid=self.rbd["secret_uuid"] if self.rbd else None)
        self.cinder.glance_url = self.glance.url
        for service in (self.barbican, self.glance, self.cinder):
            service.die_with_parent = True
            self.harnesses.append(service)
            service.install()
            service.configure()
            service.start()
        self.barbican.wait_ready(timeout)
        self.glance.wait_ready(timeout)
        self.cinder.wait_ready(timeout)

    def _start_volumesvc(self, transport_url, timeout):
        self.log("volumesvc: conductors, computes in their namespaces, API nodes, HAProxy")
        write_cluster_config(
            self.conf_path, state_dir=self.state_dir, transport_url=transport_url["volumesvc"],
            database_url=self.db_server.url("volumesvc"), cinder_url=self.cinder.url,
            glance_url=self.glance.url, subnet=str(self.net.subnet),
            key_manager_url=self.barbican.url, keystone=self.keystone, rbd=self.rbd,
            ca_file=self.ca_file)
        # What the services write: lock files, the instances' directories.
        for sub in ("locks", "instances"):
            os.makedirs(os.path.join(self.state_dir, sub), exist_ok=True)
            shutil.chown(os.path.join(self.state_dir, sub), self.service_user,
                         self.service_user)
        shutil.chown(self.conf_path, self.service_user, self.service_user)
        system.write_sudoers(self.sudoers, "".join(
            system.privsep_sudoers(self.service_user, self._privsep_helper(host))
            for host in self.hosts))
        subprocess.run(self._service_argv("volumesvc-manage", self.conf_path) + ["db", "sync"],
                       check=True, stdout=subprocess.DEVNULL, timeout=300, cwd="/",
                       env=self._service_env())
        for name in self.conductor_names:
            self.extra_confs[name] = write_conductor_config(self.state_dir, name=name)
            self._spawn(name, self.argv_of(name), env=self._service_env())
        for index, host in enumerate(self.hosts, 1):
            name = f"compute-{index}"
            self.extra_confs[name] = write_compute_config(
                self.state_dir, host=host, my_ip=self.net.hosts[host][1],
                compute_driver=self.compute_driver,
                connection_uri=self.libvirtds[host].uri if host in self.libvirtds else None,
                privsep_helper=f"sudo {self._privsep_helper(host)}")
            self._spawn(name, self.argv_of(name), env=self._service_env())
        backends = []
        api_tls = [self._for_service_user(path) for path in self.api_tls]
        for name, port in zip(self.api_names, self.api_ports, strict=True):
            self.extra_confs[name] = write_api_config(self.state_dir, name=name,
                                                      address=self.address, port=port,
                                                      tls=api_tls)
            self._spawn(name, self.argv_of(name), env=self._service_env())
            backends.append((name, f"{self.address}:{port}"))
        pem = tls.bundle(os.path.join(self.state_dir, "tls", "haproxy.pem"), *self.api_tls)
        cfg = haproxy.write_config(os.path.join(self.state_dir, "haproxy.cfg"),
                                   bind=f"{self.address}:{self.lb_port}", backends=backends,
                                   tls=(pem, self.ca_file))
        self._spawn("haproxy", haproxy.argv(cfg))
        children = list(self.procs.values())
        harness_util.wait_for(self.api_nodes_healthy, timeout, what="both API nodes healthy",
                              children=children)
        for host in self.hosts:
            harness_util.wait_for(lambda h=host: aio_config.compute_is_up(self.conf_path, h),
                                  timeout, what=f"compute {host} up", children=children)

    # -- state -----------------------------------------------------------------
    def api_nodes_healthy(self):
        """True when every API node answers 200 on /healthcheck and the LB serves."""
        context = self.ssl_context()
        if not all(harness_util.http_json(f"https://{self.address}:{p}/healthcheck",
                                          context=context)[0] == 200
                   for p in self.api_ports):
            return False
        return harness_util.http_json(f"{self.lb_url}/", context=context)[0] == 200

    def ready_lines(self):
        return [f"volumesvc-cluster: ready compute={self.lb_url}/v2.1 "
                f"volume={self.cinder.url} image={self.glance.url}",
                f"volumesvc-cluster: database={self.database} "
                f"({self.db_server.url('volumesvc')}) compute_driver={self.compute_driver} "
                f"auth={self.auth}"
                + (f" identity={self.keystone.url} clouds.yaml={self.state_dir}/clouds.yaml"
                   if self.keystone else ""),
                *([f"volumesvc-cluster: ceph conf={self.ceph.conf_path} (mon on "
                   f"{self.address}); libvirt per host: "
                   + " ".join(f"{h}={d.uri} (peers: {d.host.tcp_uri})"
                              for h, d in self.libvirtds.items())] if self.ceph else []),
                f"volumesvc-cluster: TLS to RabbitMQ, volumesvc's database and the API, "
                f"verified against ca={self.ca_file}",
                f"volumesvc-cluster: config={self.conf_path} logs={self.state_dir}/logs "
                f"computes={','.join(self.hosts)} (namespaces {self.net.prefix}-*)"]

    # -- stop ------------------------------------------------------------------
    def stop(self):
        """volumesvc first, then guests and libvirt daemons, the services, Ceph, HAProxy,
        RabbitMQ, databases, network."""
        first = [p for n, p in self.procs.items()
                 if n.startswith(("api-", "conductor-", "compute-", "haproxy"))]
        harness_util.stop_all([p.stop for p in first], timeout=60)
        # A host's daemon destroys its guests before it stops.
        harness_util.stop_all([d.stop for d in self.libvirtds.values()], timeout=90)
        harness_util.stop_qemu_guests(self.state_dir + "/")
        harness_util.stop_all([h.stop for h in self.harnesses], timeout=60)
        if self.ceph is not None:
            self.ceph.stop()
        rest = [p for p in self.procs.values() if p not in first]
        harness_util.stop_all([lambda p=p: p.stop(timeout=60) for p in rest], timeout=90)
        self.procs = {}
        self.harnesses = []
        self.libvirtds = {}
        self.ceph = None
        cleanup(self.state_dir, self.net)


def cleanup(state_dir, net):
    """Stop what a killed run left, drop the network.

    That is whatever names ``state_dir`` on its command line or in its
    environment (the RabbitMQ nodes are configured through theirs), and every
    process in one of the deployment's namespaces: the libvirt daemons and their QEMU guests name
    only the paths of their private mount namespaces, which go away (with
    their bind mounts) once the last of those processes is gone.
    """
    me = os.getpid()
    root = state_dir.rstrip("/") + "/"
    for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        pids = [p for p in {*harness_util.pids_naming(root), *pids_with_environment_naming(root),
                            *net.pids()}
                if p != me and p != os.getppid()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if os.path.exists(f"/proc/{p}")]
            time.sleep(0.5)
    net.teardown()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(sudoers_path(net.prefix))


def pids_with_environment_naming(root):
    """PIDs of processes with an environment variable whose value names files under ``root``.

    A shell's ``PWD`` and ``OLDPWD`` do not count: an operator's terminal in
    the state directory is not the deployment's.
    """
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if any(value.startswith(root) for name, _, value in
               (var.partition("=") for var in environ.split("\0"))
               if name not in ("PWD", "OLDPWD")):
            found.append(int(entry))
    return found


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="volumesvc-cluster",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("start", "stop"), nargs="?", default="start",
                        help="start (foreground; Ctrl-C stops it) or stop (clean up a "
                             "cluster whose start was killed)")
    parser.add_argument("--state-dir", default=DEFAULT_STATE_DIR)
    parser.add_argument("--computes", type=int, default=3)
    parser.add_argument("--prefix", default="vsc",
                        help="names of the namespaces, links and RabbitMQ nodes")
    parser.add_argument("--subnet", default=netns.DEFAULT_SUBNET)
    parser.add_argument("--database", choices=DATABASES, default="postgresql",
                        help="the server of volumesvc's database (Cinder and Glance keep "
                             "PostgreSQL)")
    parser.add_argument("--compute-driver", choices=COMPUTE_DRIVERS, default="libvirt",
                        help="fake: computes without QEMU guests, for storms larger than "
                             "the machine can run guests for")
    parser.add_argument("--auth", choices=AUTHS, default="keystone",
                        help="keystone: a Keystone on the bridge validates every token, "
                             "services send service tokens; noauth2: token user:project")
    parser.add_argument("--port-offset", type=int, default=0,
                        help="added to every port of the deployment, for a second one "
                             "beside it (with another --prefix, --subnet and --state-dir)")
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    return parser.parse_args(argv)


def main(argv=None):
    args = _parse_args(argv)
    if os.geteuid() != 0:
        print("volumesvc-cluster: needs root (network namespaces, RabbitMQ, "
              "PostgreSQL and MariaDB run as their users)", file=sys.stderr)
        return 2
    net = netns.Network(args.prefix, args.subnet)
    if args.action == "stop":
        cleanup(os.path.abspath(args.state_dir), net)
        print("volumesvc-cluster: stopped", flush=True)
        return 0
    cluster = Cluster(args.state_dir, computes=args.computes, prefix=args.prefix,
                      subnet=args.subnet, database=args.database,
                      compute_driver=args.compute_driver, port_offset=args.port_offset,
                      auth=args.auth, log=lambda m: print(m, flush=True))
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        cluster.start(args.ready_timeout)
        for line in cluster.ready_lines():
            print(line, flush=True)
        while all(p.running() for n, p in cluster.procs.items()):
            time.sleep(1)
        dead = [n for n, p in cluster.procs.items() if not p.running()]
        print(f"volumesvc-cluster: {', '.join(dead)} exited; stopping", flush=True)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()
        print("volumesvc-cluster: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
