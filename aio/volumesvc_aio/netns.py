"""Network namespaces that make one machine look like several hosts.

The cluster deployment (``volumesvc_aio.cluster``) runs every compute in a
Linux network namespace of its own, joined to the root namespace by a veth
pair on one bridge. The control plane (RabbitMQ, PostgreSQL, Cinder, Glance,
the load balancer) listens on the bridge's address in the root namespace, so
a compute reaches it exactly as a hypervisor reaches a controller: over an
address that is not its own loopback. The namespaces get no default route:
nothing in them can reach any address outside the private subnet.

Everything here is idempotent and ``teardown`` removes only what carries the
deployment's prefix, so a run that was killed is cleaned by the next
``stop``.
"""

import ipaddress
import subprocess

DEFAULT_SUBNET = "10.251.0.0/24"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True,
                          timeout=30)


class Network:
    """A bridge in the root namespace and one namespace per host name.

    :param prefix: names every link and namespace this deployment creates
        (``<prefix>-br``, ``<prefix>-<n>h``, namespace ``<prefix>-<host>``),
        kept short because Linux link names stop at 15 characters.
    :param subnet: the private /24 the bridge and the namespaces share; the
        bridge takes ``.1``, the n-th namespace ``.10+n``.
    """

    def __init__(self, prefix="vsc", subnet=DEFAULT_SUBNET):
        self.prefix = prefix
        self.subnet = ipaddress.ip_network(subnet)
        self.bridge = f"{prefix}-br"
        self.hosts = {}

    @property
    def bridge_address(self):
        """The control plane's address: every service a compute calls listens here."""
        return str(self.subnet.network_address + 1)

    def address_of(self, index):
        return str(self.subnet.network_address + 10 + index)

    def namespace(self, host):
        return f"{self.prefix}-{host}"

    def setup_bridge(self):
        if _ip("link", "show", self.bridge, check=False).returncode != 0:
            _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "replace", f"{self.bridge_address}/{self.subnet.prefixlen}",
            "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def add_host(self, host, index):
        """Namespace for ``host`` with address ``.10+index`` on the bridge; returns it."""
        ns = self.namespace(host)
        outside, inside = f"{self.prefix}-{index}h", f"{self.prefix}-{index}n"
        if ns not in namespaces():
            _ip("netns", "add", ns)
        if _ip("link", "show", outside, check=False).returncode != 0:
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", ns)
            _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        address = self.address_of(index)
        _ip("-n", ns, "addr", "replace", f"{address}/{self.subnet.prefixlen}", "dev", inside)
        _ip("-n", ns, "link", "set", inside, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self.hosts[host] = (ns, address)
        return ns, address

    def exec_argv(self, host, argv):
        """``argv`` run inside ``host``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(host), *argv]

    def pids(self):
        """Every process in one of this deployment's namespaces (a killed run's too)."""
        found = set()
        for ns in namespaces():
            if ns.startswith(f"{self.prefix}-"):
                found |= {int(pid) for pid in _ip("netns", "pids", ns, check=False).stdout.split()}
        return found

    def teardown(self):
        """Delete every namespace and link with this prefix (also those of a killed run)."""
        for ns in namespaces():
            if ns.startswith(f"{self.prefix}-"):
                _ip("netns", "delete", ns, check=False)
        links = _ip("-o", "link", "show", check=False).stdout.splitlines()
        for line in links:
            name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
            if name.startswith(f"{self.prefix}-") and name != self.bridge:
                _ip("link", "delete", name, check=False)
        _ip("link", "delete", self.bridge, check=False)
        self.hosts = {}


def namespaces():
    """Names of the network namespaces that exist now."""
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]
