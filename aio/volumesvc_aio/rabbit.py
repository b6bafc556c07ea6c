"""RabbitMQ helpers for the single-machine setup and integration tests.

Two Cinders, or a test run and the all-in-one, that share one RabbitMQ talk
over the same topics unless each has its own virtual host. These helpers
start a RabbitMQ only when none answers on the port (the project's machines
usually run one already) and create or delete per-run virtual hosts with
``rabbitmqctl``.
"""

import os
import socket
import subprocess
import time
import urllib.parse

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5672
DEFAULT_USER = "guest"
DEFAULT_PASSWORD = "guest"


def _env():
    """Environment that keeps a RabbitMQ we start (and rabbitmqctl) on loopback."""
    env = dict(os.environ)
    env.setdefault("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
    env.setdefault("ERL_EPMD_ADDRESS", "127.0.0.1")
    env.setdefault("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                   "-kernel inet_dist_use_interface {127,0,0,1}")
    return env


class NodeExited(RuntimeError):
    """A RabbitMQ node's process ended before the node served."""


def _bindable(address, port) -> bool:
    """True when ``address:port`` can be bound now (as a server does, without reuse)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
        return True


def port_open(host=DEFAULT_HOST, port=DEFAULT_PORT, timeout=1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _ctl(*args, check=True, timeout=60):
    return subprocess.run(["rabbitmqctl", *args], env=_env(), check=check,
                          capture_output=True, text=True, timeout=timeout)


def ensure_rabbit(timeout=60.0, host=DEFAULT_HOST, port=DEFAULT_PORT):
    """Start RabbitMQ (detached) unless something already listens on ``port``.

    Returns True when this call started it. The server outlives the caller on
    purpose: it is shared machine infrastructure, like the database servers.
    """
    if port_open(host, port):
        return False
    subprocess.run(["rabbitmq-server", "-detached"], env=_env(), check=True,
                   capture_output=True, timeout=60)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = _ctl("await_startup", check=False, timeout=timeout)
        if result.returncode == 0 and port_open(host, port):
            return True
        time.sleep(1)
    raise RuntimeError(f"RabbitMQ did not start on {host}:{port} within {timeout}s")


def transport_url(vhost, host=DEFAULT_HOST, port=DEFAULT_PORT,
                  user=DEFAULT_USER, password=DEFAULT_PASSWORD) -> str:
    """oslo.messaging URL for ``vhost`` (quoted, so names with '/' work)."""
    return (f"rabbit://{user}:{password}@{host}:{port}/"
            f"{urllib.parse.quote(vhost, safe='')}")


def ensure_vhost(name, user=DEFAULT_USER, host=DEFAULT_HOST, port=DEFAULT_PORT, *,
                 fresh=False) -> str:
    """Create virtual host ``name`` (idempotent), grant ``user`` everything, return its URL.

    ``fresh`` deletes it first, with whatever messages an earlier deployment
    left queued in it.
    """
    ensure_rabbit(host=host, port=port)
    if fresh:
        delete_vhost(name)
    result = _ctl("add_vhost", name, check=False)
    if result.returncode != 0 and "already" not in (result.stdout + result.stderr):
        raise RuntimeError(f"rabbitmqctl add_vhost {name} failed: {result.stderr.strip()}")
    _ctl("set_permissions", "-p", name, user, ".*", ".*", ".*")
    return transport_url(name, host=host, port=port, user=user)


def delete_vhost(name):
    """Delete virtual host ``name``; a missing one is not an error."""
    result = _ctl("delete_vhost", name, check=False)
    if result.returncode != 0 and "not" not in (result.stdout + result.stderr).lower():
        raise RuntimeError(f"rabbitmqctl delete_vhost {name} failed: {result.stderr.strip()}")


# -- a RabbitMQ cluster of several nodes on one machine (volumesvc_aio.cluster) --

CLUSTER_USER = "volumesvc"


class ClusterNode:
    """One RabbitMQ node of a cluster on this machine, next to the default node.

    Each node has its own Erlang node name, AMQP port, data and log
    directories and configuration file, so neither the machine's default
    node (5672, ``/etc/rabbitmq``) nor its plugins are touched. The node
    runs in the foreground of its own process group: stopping that group is
    stopping the node (a fault the cluster tests inject).

    ``authority`` (a :class:`volumesvc_aio.tls.Authority`): the node's only
    AMQP listener is TLS on ``address:port``, with a certificate of that
    CA; no plain listener at all, so no client can fall back to one. The
    nodes' clustering (Erlang distribution, ``rabbitmqctl``) is local to
    this machine and stays as it is.
    """

    def __init__(self, state_dir, name, address, port, authority=None):
        self.dir = os.path.join(state_dir, name)
        self.nodename = f"{name}@localhost"
        self.address = address
        self.port = port
        self.authority = authority

    def env(self):
        env = _env()
        env.update({
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.port + 20000),
            "RABBITMQ_CONFIG_FILE": os.path.join(self.dir, "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(self.dir, "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": os.path.join(self.dir, "mnesia"),
            "RABBITMQ_LOG_BASE": os.path.join(self.dir, "log"),
            "RABBITMQ_PID_FILE": os.path.join(self.dir, "rabbit.pid"),
        })
        env.pop("RABBITMQ_NODE_IP_ADDRESS", None)
        if self.authority is not None:
            # The listeners come from the configuration file only: the port
            # variable would add a plain one.
            env.pop("RABBITMQ_NODE_PORT", None)
        # The Erlang cookie every node of the machine shares (rabbitmq's home).
        env["HOME"] = "/var/lib/rabbitmq"
        return env

    def wait_ports_free(self, timeout=120.0):
        """Wait until this node's AMQP and distribution ports can be bound.

        Why: a deployment started right after another one stopped finds the
        old nodes' connections in ``TIME_WAIT`` on the same fixed ports for
        up to a minute; RabbitMQ then refuses to start
        (``dist_port_already_used``) instead of waiting.
        """
        ports = ((self.address, self.port), ("127.0.0.1", self.port + 20000))
        deadline = time.monotonic() + timeout
        while True:
            busy = [port for address, port in ports if not _bindable(address, port)]
            if not busy:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"RabbitMQ node {self.nodename}: ports {busy} still in use "
                                   f"after {timeout}s")
            time.sleep(2)

    def configure(self):
        """Config (AMQP on ``address:port`` only, no plugins), dirs owned by rabbitmq."""
        for sub in ("mnesia", "log"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write(self._listener_config() + "loopback_users = none\n"
                    "cluster_partition_handling = pause_minority\n")
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        subprocess.run(["chown", "-R", "rabbitmq:rabbitmq", self.dir], check=True)

    def _listener_config(self):
        if self.authority is None:
            return f"listeners.tcp.1 = {self.address}:{self.port}\n"
        from volumesvc_aio import tls

        cert, key = self.authority.issue(self.nodename.split("@")[0], ip=self.address)
        ca, cert, key = tls.own_copy("rabbitmq", os.path.join(self.dir, "tls"),
                                     self.authority.ca_file, cert, key)
        # Clients authenticate with their password, as over plain AMQP.
        return ("listeners.tcp = none\n"
                f"listeners.ssl.default = {self.address}:{self.port}\n"
                f"ssl_options.cacertfile = {ca}\nssl_options.certfile = {cert}\n"
                f"ssl_options.keyfile = {key}\nssl_options.verify = verify_none\n"
                "ssl_options.fail_if_no_peer_cert = false\n")

    def argv(self):
        """The server as user rabbitmq, in the caller's process group.

        Not Debian's ``rabbitmq-server`` wrapper: its ``su`` starts a new
        session, so the node would escape the group that stops it.
        """
        return ["setpriv", "--reuid=rabbitmq", "--regid=rabbitmq", "--init-groups",
                "/usr/lib/rabbitmq/bin/rabbitmq-server"]

    def ctl(self, *args, check=True, timeout=120):
        return subprocess.run(["rabbitmqctl", "-n", self.nodename, *args], env=self.env(),
                              check=check, capture_output=True, text=True, timeout=timeout)

    def await_startup(self, timeout=120.0, alive=None):
        """Wait until the node serves AMQP; ``alive()`` False ends the wait at once.

        ``alive``: whether the node's process still runs. A node that
        exited while it booted (it could not bind a port) raises
        :class:`NodeExited` instead of being waited for until ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise NodeExited(f"RabbitMQ node {self.nodename} exited while starting")
            if self.ctl("await_startup", check=False, timeout=timeout).returncode == 0 \
                    and port_open(self.address, self.port):
                return
            time.sleep(1)
        raise RuntimeError(f"RabbitMQ node {self.nodename} did not start within {timeout}s")

    def join(self, seed):
        """Make this (fresh, running) node a member of ``seed``'s cluster (idempotent)."""
        status = self.ctl("cluster_status", "--formatter", "json", check=False).stdout
        if seed.nodename in status:
            return
        self.ctl("stop_app")
        self.ctl("join_cluster", seed.nodename)
        self.ctl("start_app")


def cluster_user(seed, vhosts, password):
    """The cluster's user (not guest: it may connect from any address) and its vhosts.

    A user is replicated to every node of the cluster, so asking one node
    is enough.
    """
    result = seed.ctl("add_user", CLUSTER_USER, password, check=False)
    if result.returncode != 0:
        if "already" not in (result.stdout + result.stderr):
            raise RuntimeError(f"rabbitmqctl add_user failed: {result.stderr.strip()}")
        seed.ctl("change_password", CLUSTER_USER, password)
    for vhost in vhosts:
        result = seed.ctl("add_vhost", vhost, check=False)
        if result.returncode != 0 and "already" not in (result.stdout + result.stderr):
            raise RuntimeError(f"rabbitmqctl add_vhost failed: {result.stderr.strip()}")
        seed.ctl("set_permissions", "-p", vhost, CLUSTER_USER, ".*", ".*", ".*")


def cluster_transport_url(nodes, vhost, password, user=CLUSTER_USER):
    """oslo.messaging URL listing every node: a client fails over to the next one."""
    hosts = ",".join(f"{user}:{password}@{n.address}:{n.port}" for n in nodes)
    return f"rabbit://{hosts}/{urllib.parse.quote(vhost, safe='')}"
