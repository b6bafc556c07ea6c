"""volumesvc-aio: the whole single-machine deployment in the foreground.

Brings up, in order: missing Debian packages (RabbitMQ, libvirt/QEMU, Ceph),
RabbitMQ if it is not running, a virtual host of its own, a one-node Ceph
and the libvirt daemon (unless ``--storage file``), a real Barbican (the key
manager of encrypted volumes), Cinder (backends ``rbd`` and ``file``, with an
encrypting ``-luks`` type each) and Glance (images on RBD) from PyPI in their
own virtualenvs, then volumesvc's api, conductor and computes as separate
processes over SQLite, on ``qemu:///system`` (or, with ``--storage file``,
an embedded QEMU each).
It prints one ``volumesvc-aio: ready ...`` line when everything answers and
stops everything it started on SIGINT/SIGTERM.
"""

import argparse
import functools
import importlib
import os
import signal
import sys
import threading
import time
import urllib.request

import volumesvc_aio as harness_util
from volumesvc import binaries
from volumesvc_aio import config as aio_config
from volumesvc_aio import priority

DEFAULT_STATE_DIR = "/var/lib/volumesvc-aio"

# Python modules the all-in-one needs beyond volumesvc's own dependencies,
# both declared by the volumesvc-aio distribution (aio/pyproject.toml):
# PyMySQL for Cinder's MariaDB database (created from this process) and the
# libvirt binding for the compute. Checked because an install with --no-deps
# or a venv made by hand can still lack them.
EXTRA_MODULES = ("pymysql", "libvirt")


def missing_modules():
    """The EXTRA_MODULES that cannot be imported here."""
    missing = []
    for name in EXTRA_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="volumesvc-aio", description=__doc__.split("\n")[0])
    parser.add_argument("--state-dir", default=DEFAULT_STATE_DIR,
                        help="where config, databases, logs, volumes and libvirt live "
                             f"(default {DEFAULT_STATE_DIR}; must not be tmpfs)")
    parser.add_argument("--api-port", type=int, default=8774, help="compute API port")
    parser.add_argument("--volume-port", type=int, default=8776, help="Cinder API port")
    parser.add_argument("--image-port", type=int, default=9292, help="Glance API port")
    parser.add_argument("--identity-port", type=int, default=5000, help="Keystone API port")
    parser.add_argument("--key-manager-port", type=int, default=9311,
                        help="Barbican API port (the key manager of encrypted volumes)")
    parser.add_argument("--auth", choices=("keystone", "noauth2"), default="keystone",
                        help="keystone (default): a real Keystone validates every token and "
                             "<state dir>/clouds.yaml names its users; noauth2: no Keystone, "
                             "the token is user:project (quick tests)")
    parser.add_argument("--host", default="aio-compute",
                        help="name of the (first) compute host and its RPC server")
    parser.add_argument("--computes", type=int, default=1, metavar="N",
                        help="run N compute agents, named HOST, HOST-2, ... HOST-N, each "
                             "with its own embedded QEMU root (default 1)")
    parser.add_argument("--compute-driver", action="append", default=[],
                        metavar="HOST=DRIVER[,-CAPABILITY...]",
                        help="driver of one compute (repeatable; default libvirt), with "
                             "capabilities switched off, e.g. "
                             "aio-compute-2=libvirt,-supports_multiattach")
    parser.add_argument("--storage", choices=("ceph", "file"), default="ceph",
                        help="ceph (default): a one-node Ceph under <state dir>/ceph, Cinder "
                             "backends rbd (the default volume type) and file, Glance images "
                             "on RBD, computes on qemu:///system through a libvirt daemon; "
                             "file: the file backend only, computes on embedded QEMU, no "
                             "Ceph and no daemon (a quicker start for development)")
    parser.add_argument("--api-workers", type=int, default=2)
    parser.add_argument("--volume-api-workers", type=int, default=1,
                        help="cinder-api worker processes (osapi_volume_workers)")
    parser.add_argument("--failed-attachment-ttl", type=int, default=None, metavar="SECONDS",
                        help="[api] failed_attachment_ttl (API 2.106; default: the option's)")
    parser.add_argument("--ready-timeout", type=float, default=600.0,
                        help="seconds to wait for everything to answer")
    parser.add_argument("--no-cpu-priority", dest="cpu_priority", action="store_false",
                        help="run conductor, compute, Cinder and Glance at the API's CPU "
                             "priority (by default they run at nice "
                             f"{priority.BACKGROUND_NICE}, so requests come first; "
                             "doc/source/admin/cpu-priority.rst)")
    parser.add_argument("--no-install", action="store_true",
                        help="do not apt-get install missing system packages")
    args = parser.parse_args(argv)
    if args.computes < 1:
        parser.error("--computes must be at least 1")
    hosts = aio_config.compute_hosts(args.host, args.computes)
    args.drivers = {}
    for spec in args.compute_driver:
        try:
            host, driver, disabled = aio_config.parse_compute_driver(spec)
        except ValueError as exc:
            parser.error(f"--compute-driver {exc}")
        if host not in hosts:
            parser.error(f"--compute-driver {spec!r}: no compute {host!r} "
                         f"(the computes are {', '.join(hosts)})")
        args.drivers[host] = (driver, disabled)
    args.hosts = hosts
    return args


def _http_ok(url, statuses=(200, 300)):
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status in statuses
    except urllib.error.HTTPError as exc:
        return exc.code in statuses


class AllInOne:
    """Owns every process the all-in-one started, in start order."""

    def __init__(self, args):
        self.args = args
        self.state_dir = os.path.abspath(args.state_dir)
        self.metrics_ports: dict[str, int] = {}
        self.children = []
        self.harnesses = []
        # Ceph and the libvirt daemon: stopped after everything that uses them.
        self.infra = []
        self.ceph = None
        self.libvirtd = None
        self.rbd = None
        self.vhost = None
        self.keystone = None
        self.clouds_yaml = None
        self.started_at = time.monotonic()

    def _log(self, message):
        # NOTE: the seconds since the start say which step a slow or failed
        # start spent its time in.
        print(f"volumesvc-aio: [{time.monotonic() - self.started_at:6.1f}s] {message}", flush=True)

    def start(self):
        from volumesvc_aio import barbican, cinder, glance, rabbit, system

        # NOTE: the Cinder database and the vhosts are named after the API
        # port and kept for a restart on the same state dir. A new state dir
        # is a new deployment: what an earlier one left under those names
        # (a run that was killed) is dropped, never reused.
        fresh = not os.path.exists(os.path.join(self.state_dir, "cinder"))
        os.makedirs(self.state_dir, exist_ok=True)
        if not self.args.no_install:
            installed = system.ensure_system()
            if installed:
                self._log("installed " + " ".join(installed))
        rabbit.ensure_rabbit()
        system.ensure_mariadb()
        tag = f"aio-{self.args.api_port}"
        transport_url = rabbit.ensure_vhost(f"volumesvc-{tag}", fresh=fresh)
        api_url = f"http://127.0.0.1:{self.args.api_port}/v2.1"

        if self.args.storage == "ceph":
            self._start_storage(fresh)
        if self.args.auth == "keystone":
            self.keystone = self._start_keystone(api_url)
        self._log("starting Barbican, Glance and Cinder (the first run installs them from PyPI)")
        keys = self._start_service(barbican.BarbicanHarness(
            os.path.join(self.state_dir, "barbican"), port=self.args.key_manager_port,
            keystone=self.keystone))
        image = self._start_service(glance.GlanceHarness(
            os.path.join(self.state_dir, "glance"), port=self.args.image_port,
            keystone=self.keystone, ceph=self.ceph))
        # NOTE: Cinder on SQLite answers "database is locked" as soon as two
        # requests overlap, so the all-in-one gives it a MariaDB database.
        volume = self._start_service(cinder.CinderHarness(
            os.path.join(self.state_dir, "cinder"), port=self.args.volume_port,
            transport_url=rabbit.ensure_vhost(f"cinder-{tag}", fresh=fresh),
            database_connection=system.mariadb_database(f"cinder_{tag.replace('-', '_')}",
                                                        fresh=fresh),
            nova_endpoint=api_url, glance_url=image.url, keystone=self.keystone,
            extend_completion=True, ceph=self.ceph,
            rbd_secret_uuid=self.rbd["secret_uuid"] if self.rbd else None,
            api_workers=self.args.volume_api_workers, key_manager_url=keys.url))

        # The conductor's and each compute's metrics port (printed when ready).
        self.metrics_ports = {binaries.CONDUCTOR: harness_util.free_port()}
        conf_path = aio_config.write_config(
            self.state_dir, transport_url=transport_url, api_port=self.args.api_port,
            api_workers=self.args.api_workers, host=self.args.host,
            cinder_url=volume.url, glance_url=image.url, keystone=self.keystone,
            failed_attachment_ttl=self.args.failed_attachment_ttl, rbd=self.rbd,
            conductor_metrics_port=self.metrics_ports[binaries.CONDUCTOR],
            key_manager_url=keys.url)
        self._run_once(["volumesvc-manage", "--config-file", conf_path, "db", "sync"])
        self._spawn(binaries.CONDUCTOR, conf_path)
        for index, host in enumerate(self.args.hosts):
            driver, disabled = self.args.drivers.get(host, ("libvirt", []))
            self.metrics_ports[f"{binaries.COMPUTE}-{host}"] = harness_util.free_port()
            host_conf = aio_config.write_compute_config(
                self.state_dir, host=host, first=index == 0, driver=driver,
                disabled_capabilities=disabled,
                connection_uri=self.rbd["uri"] if self.rbd else None,
                metrics_port=self.metrics_ports[f"{binaries.COMPUTE}-{host}"])
            # NOTE: the first compute keeps the historical log name.
            self._spawn(binaries.COMPUTE, conf_path, host_conf,
                        log_name=binaries.COMPUTE if index == 0
                        else f"{binaries.COMPUTE}-{host}")
        self._spawn(binaries.API, conf_path)

        timeout = self.args.ready_timeout
        self._log("waiting for Barbican, Glance, Cinder, the compute API and the compute "
                  "services")
        keys.wait_ready(timeout)
        image.wait_ready(timeout)
        volume.wait_ready(timeout)
        harness_util.wait_for(lambda: _http_ok(api_url), timeout, what="the compute API",
                              children=self.children)
        for host in self.args.hosts:
            harness_util.wait_for(lambda host=host: aio_config.compute_is_up(conf_path, host),
                                  timeout, what=f"the compute service on {host} to report up",
                                  children=self.children)
        self._log("uploading the starter image")
        token = self.keystone.token() if self.keystone is not None else None
        image_id = aio_config.ensure_image(image.url, self.state_dir, token=token,
                                           log=self._log)
        return api_url, volume.url, image.url, conf_path, image_id

    def _start_storage(self, fresh):
        """The libvirt daemon and a one-node Ceph (about 20 s), before Cinder and Glance.

        NOTE: from this thread: the daemons get SIGTERM when the thread that
        started them ends (die_with_parent), so not from a helper thread.
        """
        from volumesvc_aio import ceph, libvirtd

        self.libvirtd = libvirtd.LibvirtDaemon(os.path.join(self.state_dir, "libvirtd"))
        self.libvirtd.die_with_parent = True
        self.ceph = ceph.CephHarness(os.path.join(self.state_dir, "ceph"))
        self.ceph.background_priority = self.args.cpu_priority
        self.ceph.die_with_parent = True
        self.infra += [self.ceph, self.libvirtd]
        if not self.args.no_install:
            installed = self.ceph.install()
            if installed:
                self._log("installed " + " ".join(installed))
        self._log(f"starting Ceph (one mon, mgr and OSD under {self.ceph.state_dir}) "
                  "and the libvirt daemon")
        self.libvirtd.setup(self.args.ready_timeout)
        if fresh:
            self.ceph.configure()  # a new deployment: a new cluster
        self.ceph.start()
        self.ceph.wait_ready(self.args.ready_timeout)
        self.rbd = {"uri": self.libvirtd.uri, "user": "cinder",
                    "secret_uuid": _secret_uuid(self.state_dir),
                    "keyring": self.ceph.keyring("cinder")}
        self._log(f"Ceph ready: conf {self.ceph.conf_path} "
                  f"admin keyring {self.ceph.admin_keyring}")

    def _start_service(self, harness):
        """Install, configure and start one service harness, not waiting for its answer.

        The services start side by side: each one's config needs the others'
        URLs, not their answers; ``wait_ready`` comes once all are started.
        """
        harness.background_priority = self.args.cpu_priority
        harness.die_with_parent = True
        self.harnesses.append(harness)
        harness.install()
        harness.configure()
        harness.start()
        return harness

    def _start_keystone(self, api_url):
        """Keystone first: the others validate tokens against it from their start.

        Returns the harness once users, projects and the catalog exist, and
        writes ``<state dir>/clouds.yaml``.
        """
        from volumesvc_aio import keystone

        self._log("starting Keystone (the first run installs it from PyPI)")
        identity = keystone.KeystoneHarness(os.path.join(self.state_dir, "keystone"),
                                            port=self.args.identity_port)
        identity.die_with_parent = True
        self.harnesses.append(identity)
        identity.setup(self.args.ready_timeout)
        volume_url = f"http://127.0.0.1:{self.args.volume_port}/v3"
        identity.provision({
            "compute": ("nova", api_url),
            "image": ("glance", f"http://127.0.0.1:{self.args.image_port}"),
            # tempest 47 looks block storage up as block-storage; older
            # clients as volumev3: the same endpoint under both.
            "volumev3": ("cinderv3", volume_url),
            "block-storage": ("cinder", volume_url),
            "key-manager": ("barbican", f"http://127.0.0.1:{self.args.key_manager_port}"),
        })
        self.clouds_yaml = identity.write_clouds_yaml(
            os.path.join(self.state_dir, "clouds.yaml"))
        self._log("Keystone ready and provisioned")
        return identity

    def _spawn(self, binary, *conf_paths, log_name=None):
        exe = os.path.join(os.path.dirname(sys.executable), binary)
        log_path = os.path.join(self.state_dir, "logs", f"{log_name or binary}.log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        argv = [exe if os.path.exists(exe) else binary]
        for path in conf_paths:
            argv += ["--config-file", path]
        child = harness_util.ProcessGroup(
            log_name or binary, argv, log_path,
            nice=priority.nice_for(log_name or binary, self.args.cpu_priority),
            die_with_parent=True)
        self.children.append(child.start())

    def _run_once(self, argv):
        import subprocess

        exe = os.path.join(os.path.dirname(sys.executable), argv[0])
        argv = [exe if os.path.exists(exe) else argv[0], *argv[1:]]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=300)

    def stop(self):
        """Stop volumesvc's processes, the guests, Cinder and Glance, then Ceph and libvirtd.

        Each group is stopped in parallel.
        """
        for group in (list(self.children), [_Guests(self)], list(self.harnesses),
                      list(self.infra)):
            harness_util.stop_all([functools.partial(self._stop_one, item) for item in group],
                                  timeout=60)

    def stop_guests(self):
        """Stop the QEMU processes of this all-in-one's servers.

        In production guests outlive their compute agent on purpose; the
        all-in-one owns its whole machine state, so nothing of it may stay.
        """
        harness_util.stop_qemu_guests(self.state_dir + "/")
        if self.rbd is not None and self.libvirtd is not None:
            servers = instance_uuids(self.state_dir)
            remove_domains(self.rbd["uri"], servers, self.rbd["secret_uuid"])
            # NOTE: a destroy that timed out on a loaded machine leaves QEMU
            # running without a domain: its command line names the UUID.
            for server in servers:
                harness_util.stop_qemu_guests(server)

    def _stop_one(self, item):
        try:
            item.stop()
        except Exception as exc:  # noqa: BLE001 - stop the rest regardless
            self._log(f"stopping {getattr(item, 'name', type(item).__name__)} failed: {exc}")


def _secret_uuid(state_dir):
    """The libvirt secret UUID of this deployment (Cinder's ``rbd_secret_uuid``)."""
    import uuid

    path = os.path.join(state_dir, "rbd_secret_uuid")
    try:
        with open(path, encoding="utf-8") as f:
            return str(uuid.UUID(f.read().strip()))
    except (OSError, ValueError):
        value = str(uuid.uuid4())
        with open(path, "w", encoding="utf-8") as f:
            f.write(value + "\n")
        return value


def instance_uuids(state_dir):
    """UUIDs of every server this all-in-one's database knows (deleted ones too)."""
    import sqlite3

    path = os.path.join(state_dir, "volumesvc.sqlite")
    if not os.path.exists(path):
        return []
    conn = sqlite3.connect(path, timeout=10)
    try:
        return [row[0] for row in conn.execute("SELECT uuid FROM instances")]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def remove_domains(uri, servers, secret_uuid):
    """Destroy and undefine this deployment's domains on a shared libvirt daemon, and its secret.

    The daemon serves other deployments too, so only the domains of
    ``servers`` (this database's) are touched; none is left defined to
    collide with a later deployment's domain names.
    """
    import libvirt

    # Misses are expected here; libvirt would print each one on stderr.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    conn = libvirt.open(uri)
    try:
        for server in servers:
            try:
                dom = conn.lookupByUUIDString(server)
            except libvirt.libvirtError:
                continue
            for step in (dom.destroy, dom.undefine):
                try:
                    step()
                except libvirt.libvirtError:
                    pass  # not running, or already gone
        try:
            conn.secretLookupByUUIDString(secret_uuid).undefine()
        except libvirt.libvirtError:
            pass
    finally:
        conn.close()


class _Guests:
    """Adapter so the guests stop in the same sequence as the processes."""

    name = "guests"

    def __init__(self, aio):
        self._aio = aio

    def stop(self):
        self._aio.stop_guests()


def _client_help(api_url, volume_url, image_url, conf_path, image_id):
    return f"""volumesvc-aio: point clients at it (noauth2 token user:project; admin is admin):
  OS_IDENTITY_ENDPOINT_OVERRIDE={api_url} OS_IMAGE_ENDPOINT_OVERRIDE={image_url} \\
      openstack --os-auth-type admin_token --os-endpoint {api_url} --os-token admin:admin \\
      --os-compute-api-version 2.96 --os-identity-api-version 3 server list
  OS_PROJECT_ID=admin OS_AUTH_URL={api_url} nova --os-auth-type admin_token \\
      --os-endpoint {api_url} --os-token admin:admin --os-compute-api-version 2.96 list
  curl -s -H 'X-Auth-Token: admin:admin' {api_url}/servers
  volumesvc-manage --config-file {conf_path} service list
  Cinder (noauth, X-Auth-Token admin:admin, volume API 3.67): {volume_url}
  Glance (no auth): {image_url}  starter image: {image_id}
  Stop with Ctrl-C (this stops the QEMU guests of its servers too)."""


def _keystone_client_help(aio, api_url, volume_url, image_url, conf_path, image_id):
    clouds = aio.clouds_yaml
    return f"""volumesvc-aio: identity={aio.keystone.url} clouds.yaml={clouds}
volumesvc-aio: point clients at it through clouds.yaml (no endpoint overrides needed):
  export OS_CLIENT_CONFIG_FILE={clouds}
  openstack --os-cloud volumesvc-aio server list          # admin
  openstack --os-cloud volumesvc-aio-demo server list     # member of project demo
  openstack --os-cloud volumesvc-aio-reader server list   # reader of project demo
  openstacksdk: openstack.connect(cloud="volumesvc-aio-demo")
  volumesvc-manage --config-file {conf_path} service list
  compute: {api_url}  Cinder (keystone): {volume_url}
  Glance (keystone): {image_url}  starter image: {image_id}
  Stop with Ctrl-C (this stops the QEMU guests of its servers too)."""


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    missing = missing_modules()
    if missing:
        # NOTE: before anything starts, in one line, instead of a traceback
        # from deep inside the start (e.g. "No module named 'pymysql'").
        print(f"volumesvc-aio: missing Python modules ({', '.join(missing)}); install the "
              "all-in-one with its dependencies: pip install ./aio", file=sys.stderr, flush=True)
        return 1
    aio = AllInOne(args)
    stop = threading.Event()

    def _interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    # NOTE: while starting, a signal interrupts the start so that everything
    # already started is stopped below; once ready it only sets ``stop``.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        api_url, volume_url, image_url, conf_path, image_id = aio.start()
    except BaseException as exc:
        print(f"volumesvc-aio: failed to start after {time.monotonic() - aio.started_at:.1f}s: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        aio.stop()
        return 1
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    print(f"volumesvc-aio: ready compute={api_url} volume={volume_url}", flush=True)
    print(aio_config.operator_urls(aio.state_dir, args.api_port, aio.metrics_ports),
          flush=True)
    if aio.ceph is not None:
        print(f"volumesvc-aio: ceph conf={aio.ceph.conf_path} "
              f"keyring={aio.ceph.admin_keyring} (e.g. ceph -c CONF -s; rbd -c CONF ls volumes)",
              flush=True)
    if aio.keystone is not None:
        print(_keystone_client_help(aio, api_url, volume_url, image_url, conf_path, image_id),
              flush=True)
    else:
        print(_client_help(api_url, volume_url, image_url, conf_path, image_id), flush=True)
    while not stop.wait(1.0):
        dead = [c for c in aio.children if not c.running()]
        if dead:
            print(f"volumesvc-aio: {dead[0].name} exited; stopping. Last lines:\n"
                  f"{dead[0].tail()}", file=sys.stderr, flush=True)
            aio.stop()
            return 1
    print("volumesvc-aio: stopping", flush=True)
    aio.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
