"""Run a one-node Ceph (one mon, one mgr, one OSD on a sparse file) for RBD volumes.

Debian's Ceph packages are installed when missing (no kernel module, loop
device or LVM is needed: BlueStore keeps its data in a plain file). The
cluster lives entirely under ``state_dir``: ``ceph.conf``, the admin keyring,
every daemon's data, sockets and logs. Every command is given ``-c
<state_dir>/ceph.conf``, so a Ceph the machine itself may have in
``/etc/ceph`` is never read or changed. Everything binds to 127.0.0.1 (or the
``address`` given: the cluster deployment's bridge, which its hosts' network
namespaces reach) on free ports. The traps met on the way are in
``doc/source/contributor/dependencies.rst`` ("Ceph").

After :meth:`CephHarness.setup` the pools ``volumes`` and ``images`` are
initialised for RBD and ``client.cinder`` / ``client.glance`` have keyrings
next to the conf (``ceph.client.<name>.keyring``), with the capabilities
Cinder's and Glance's RBD drivers need.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

from volumesvc.virt.libvirt import secrets
from volumesvc_aio import Harness, ProcessGroup, free_port, priority, system, wait_for

PACKAGES = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-common", "qemu-block-extra",
            "python3-rados", "python3-rbd")
POOLS = ("volumes", "images")
# name -> (mon caps, osd caps, mgr caps): the profiles Cinder's and Glance's
# RBD drivers are documented with; Cinder also reads images (clones).
CLIENTS = {
    "cinder": ("profile rbd", "profile rbd pool=volumes, profile rbd pool=images",
               "profile rbd pool=volumes, profile rbd pool=images"),
    "glance": ("profile rbd", "profile rbd pool=images", "profile rbd pool=images"),
}
# Ports a daemon may bind (OSD: public and cluster, v1 and v2, two heartbeats).
PORT_RANGE_SIZE = 40
GiB = 1 << 30


def _port_free(port, host="127.0.0.1"):
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port_range(size, attempts=50, host="127.0.0.1"):
    """``size`` consecutive free ports (first, last) for ``ms bind port min/max``."""
    for _ in range(attempts):
        first = free_port(host)
        if all(_port_free(p, host) for p in range(first, first + size)):
            return first, first + size - 1
    raise RuntimeError(f"no {size} consecutive free TCP ports on {host}")


class CephHarness(Harness):
    """A one-node Ceph under ``state_dir`` that this process starts and stops.

    :param state_dir: conf, keyrings, daemon data, sockets and logs. Keep the
        path short: admin sockets live under it (108-byte UNIX socket limit).
    :param osd_size: size of the OSD's sparse block file (bytes).
    :param pools: RBD pools to create and initialise.
    :param address: where every daemon listens (and what Cinder's
        connection info names as the monitor): loopback for one machine,
        the bridge address when other network namespaces use the cluster.
    """

    LABEL = "Ceph"
    READY_TIMEOUT = 120.0

    def __init__(self, state_dir, *, osd_size=8 * GiB, pools=POOLS, clients=None,
                 address="127.0.0.1"):
        self.address = address
        self.state_dir = os.path.abspath(state_dir)
        self.conf_path = os.path.join(self.state_dir, "ceph.conf")
        self.log_dir = os.path.join(self.state_dir, "log")
        self.run_dir = os.path.join(self.state_dir, "run")
        self.osd_size = int(osd_size)
        self.pools = tuple(pools)
        self.clients = dict(CLIENTS if clients is None else clients)
        self.processes = []
        self.background_priority = False
        self.die_with_parent = False
        self.fsid = None
        self.mon_v2_port = self.mon_v1_port = None

    # -- paths and addresses ----------------------------------------------
    @property
    def admin_keyring(self):
        return self.keyring("admin")

    def keyring(self, client):
        """Path of ``client.<client>``'s keyring (what ``[client] keyring`` names)."""
        return os.path.join(self.state_dir, f"ceph.client.{client}.keyring")

    @property
    def mon_hosts(self):
        """(hosts, ports) as Cinder's RBD driver puts them in connection_info (v1 port)."""
        return [self.address], [str(self.mon_v1_port)]

    def client_key(self, client):
        """The base64 cephx key of ``client.<client>``, read from its keyring."""
        return secrets.read_keyring(self.keyring(client), client)[1]

    # -- commands -----------------------------------------------------------
    def cmd(self, program, *args, client="admin", timeout=60, check=True, input=None):
        """Run a Ceph CLI (``ceph``, ``rbd``, ...) on this cluster as ``client.<client>``."""
        argv = [program, "-c", self.conf_path, "--id", client, *args]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                input=input, env=clean_env())
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}):\n"
                               f"{result.stderr[-3000:]}")
        return result.stdout

    def ceph_json(self, *args, client="admin", timeout=30):
        return json.loads(self.cmd("ceph", *args, "--connect-timeout", "10",
                                   "-f", "json", client=client, timeout=timeout))

    def _tool(self, *argv, timeout=60):
        result = subprocess.run(list(argv), capture_output=True, text=True,
                                timeout=timeout, env=clean_env())
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}):\n"
                               f"{(result.stderr or result.stdout)[-3000:]}")
        return result.stdout

    # -- lifecycle ------------------------------------------------------------
    def install(self):
        """Install Debian's Ceph packages when missing (as root); returns what was installed."""
        return system.apt_install(PACKAGES)

    def _mon_addrs(self):
        """The monitor's v2 and v1 addresses, as ``mon host`` and the monmap take them."""
        return (f"[v2:{self.address}:{self.mon_v2_port},"
                f"v1:{self.address}:{self.mon_v1_port}]")

    def config_text(self, port_min, port_max):
        d = self.state_dir
        mon_host = self._mon_addrs()
        return "\n".join([
            "[global]",
            f"fsid = {self.fsid}",
            f"mon host = {mon_host}",
            f"public addr = {self.address}",
            f"cluster addr = {self.address}",
            "ms bind ipv6 = false",
            f"ms bind port min = {port_min}",
            f"ms bind port max = {port_max}",
            "auth cluster required = cephx",
            "auth service required = cephx",
            "auth client required = cephx",
            "auth allow insecure global id reclaim = false",
            f"run dir = {self.run_dir}",
            f"admin socket = {self.run_dir}/$name.asok",
            f"pid file = {self.run_dir}/$name.pid",
            f"log file = {self.log_dir}/$name.log",
            "osd pool default size = 1",
            "osd pool default min size = 1",
            "osd pool default pg num = 8",
            "osd pool default pgp num = 8",
            "osd pool default pg autoscale mode = off",
            "mon allow pool size one = true",
            "mon allow pool delete = true",
            "mon warn on pool no redundancy = false",
            "osd crush chooseleaf type = 0",
            "",
            "[mon]",
            f"mon data = {d}/$name",
            "mon memory target = 536870912",
            # NOTE: the default (30 % free on the mon's filesystem) turns a
            # machine with a fuller disk into HEALTH_WARN for good; Ceph still
            # goes critical at 5 %.
            "mon data avail warn = 10",
            # read by the mon, not the mgr
            "mgr initial modules = iostat",
            "",
            "[mgr]",
            f"mgr data = {d}/$name",
            "",
            "[osd]",
            f"osd data = {d}/$name",
            "osd objectstore = bluestore",
            # NOTE: no bluestore_block_path: BlueStore then makes <osd data>/block
            # a plain file itself; naming that same path makes mkfs loop on its
            # own symlink.
            "bluestore block create = true",
            f"bluestore block size = {self.osd_size}",
            "osd memory target = 1073741824",
            "osd op num shards = 1",
            "",
            "[client]",
            # NOTE: only here: in [global] it would replace the daemons'
            # <data dir>/keyring default as well.
            f"keyring = {d}/$cluster.$name.keyring",
            "",
        ])

    def configure(self):
        """Write ceph.conf and the mon and admin keyrings; build the monmap and mon store.

        Always a new cluster (new fsid, ports and keys): whatever an earlier
        run left in state_dir is removed first.
        """
        if self.processes:
            raise RuntimeError("Ceph harness is running; stop it before configuring")
        shutil.rmtree(self.state_dir, ignore_errors=True)
        for path in (self.state_dir, self.log_dir, self.run_dir):
            os.makedirs(path, exist_ok=True)
        self.fsid = str(uuid.uuid4())
        self.mon_v2_port, self.mon_v1_port = free_port(self.address), free_port(self.address)
        port_min, port_max = free_port_range(PORT_RANGE_SIZE, host=self.address)
        with open(self.conf_path, "w", encoding="utf-8") as f:
            f.write(self.config_text(port_min, port_max))
        mon_keyring = os.path.join(self.state_dir, "mon.keyring")
        self._tool("ceph-authtool", "--create-keyring", mon_keyring, "--gen-key",
                   "-n", "mon.", "--cap", "mon", "allow *")
        self._tool("ceph-authtool", "--create-keyring", self.admin_keyring, "--gen-key",
                   "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd",
                   "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *")
        self._tool("ceph-authtool", mon_keyring, "--import-keyring", self.admin_keyring)
        monmap = os.path.join(self.state_dir, "monmap")
        self._tool("monmaptool", "--create", "--fsid", self.fsid, "--addv", "a",
                   self._mon_addrs(),
                   monmap)
        self._tool("ceph-mon", "-c", self.conf_path, "--mkfs", "-i", "a",
                   "--monmap", monmap, "--keyring", mon_keyring)

    def _read_config(self):
        """fsid and mon ports of the cluster an earlier run wrote in ceph.conf."""
        with open(self.conf_path, encoding="utf-8") as f:
            for line in f:
                key, _, value = (part.strip() for part in line.partition("="))
                if key == "fsid":
                    self.fsid = value
                elif key == "mon host":
                    v2, v1 = value.strip("[]").split(",")
                    self.mon_v2_port = int(v2.rsplit(":", 1)[1])
                    self.mon_v1_port = int(v1.rsplit(":", 1)[1])

    def _daemon(self, name, argv):
        # -f: in the foreground, so the ProcessGroup owns the daemon itself.
        proc = ProcessGroup(name, [*argv, "-f", "-c", self.conf_path],
                            os.path.join(self.log_dir, f"{name}.stdout.log"),
                            env=clean_env(), cwd=self.state_dir,
                            nice=priority.nice_for(name, self.background_priority),
                            die_with_parent=self.die_with_parent)
        self.processes.append(proc.start())
        return proc

    def _start_mon(self):
        mon = self._daemon("ceph-mon", ["ceph-mon", "-i", "a"])
        wait_for(lambda: self.ceph_json("mon", "stat", timeout=15), 30,
                 what="ceph-mon to answer", children=[mon], on_fail=self._logs)

    def _start_mgr(self):
        data = os.path.join(self.state_dir, "mgr.x")
        os.makedirs(data, exist_ok=True)
        keyring = self.cmd("ceph", "auth", "get-or-create", "mgr.x", "mon", "allow profile mgr",
                           "osd", "allow *", "mds", "allow *")
        _write_private(os.path.join(data, "keyring"), keyring)
        self._daemon("ceph-mgr", ["ceph-mgr", "-i", "x"])

    def _existing_osd(self):
        """The id of an OSD an earlier start made under state_dir, or None."""
        for entry in sorted(os.listdir(self.state_dir)):
            name, _, osd_id = entry.partition(".")
            if name == "osd" and osd_id.isdigit() and os.path.exists(
                    os.path.join(self.state_dir, entry, "keyring")):
                return osd_id
        return None

    def _wait_osd_up(self, osd):
        wait_for(lambda: self.ceph_json("osd", "stat").get("num_up_osds") == 1, 60,
                 what="the OSD to be up", children=[osd], on_fail=self._logs)

    def _start_osd(self):
        existing = self._existing_osd()
        if existing is not None:
            # A restart on the same state dir: the same OSD and its data.
            self._wait_osd_up(self._daemon("ceph-osd", ["ceph-osd", "-i", existing]))
            return
        osd_uuid = str(uuid.uuid4())
        key = self._tool("ceph-authtool", "--gen-print-key").strip()
        osd_id = self.cmd("ceph", "osd", "new", osd_uuid, "-i", "-",
                          input=json.dumps({"cephx_secret": key})).strip()
        data = os.path.join(self.state_dir, f"osd.{osd_id}")
        os.makedirs(data, exist_ok=True)
        # NOTE: mkfs --key does not write the OSD's keyring; without it the OSD
        # disables cephx and cannot fetch its config from the mon.
        _write_private(os.path.join(data, "keyring"), f"[osd.{osd_id}]\n\tkey = {key}\n")
        self._tool("ceph-osd", "-c", self.conf_path, "-i", osd_id, "--mkfs", "--key", key,
                   "--osd-uuid", osd_uuid, timeout=120)
        self._wait_osd_up(self._daemon("ceph-osd", ["ceph-osd", "-i", osd_id]))

    def _create_pools_and_clients(self):
        for pool in self.pools:
            self.cmd("ceph", "osd", "pool", "create", pool, "8", "8")
            self.cmd("rbd", "pool", "init", pool, timeout=120)
        for name, (mon, osd, mgr) in self.clients.items():
            keyring = self.cmd("ceph", "auth", "get-or-create", f"client.{name}",
                               "mon", mon, "osd", osd, "mgr", mgr)
            _write_private(self.keyring(name), keyring)

    def start(self):
        """Start mon, mgr and OSD (configuring first if needed), then pools and clients.

        With a ``ceph.conf`` already in state_dir the cluster written there
        starts again, data included (pools and keys are only ensured).
        """
        if self.processes:
            raise RuntimeError("Ceph harness already started")
        if not os.path.exists(self.conf_path):
            self.configure()
        elif self.fsid is None:
            self._read_config()
        self._start_mon()
        self._start_mgr()
        self._start_osd()
        self._create_pools_and_clients()

    def _healthy(self):
        status = self.ceph_json("status")
        pgs = status.get("pgmap", {})
        states = pgs.get("pgs_by_state", [])
        # NOTE: every PG, not a count: the mgr adds a pool of its own.
        clean = states and all(s.get("state_name") == "active+clean" for s in states)
        return status.get("health", {}).get("status") == "HEALTH_OK" and clean

    def _logs(self):
        status = subprocess.run(["ceph", "-c", self.conf_path, "-s", "--connect-timeout", "5"],
                                capture_output=True, text=True, timeout=30, env=clean_env())
        return f"{super()._logs()}\n--- ceph -s\n{status.stdout}{status.stderr}"

    def wait_ready(self, timeout=None):
        """Wait for HEALTH_OK with every PG active+clean."""
        wait_for(self._healthy, self.READY_TIMEOUT if timeout is None else timeout,
                 what="Ceph HEALTH_OK and every PG active+clean", on_fail=self._logs,
                 children=self.processes)
        return self


def clean_env():
    """os.environ without what would point Ceph's tools at another cluster."""
    env = dict(os.environ)
    for name in ("CEPH_CONF", "CEPH_ARGS", "CEPH_KEYRING"):
        env.pop(name, None)
    return env


def _write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")


DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"
CEPH_MODULES = ("rados", "rbd")


def expose_ceph_modules(venv, dist_packages=DEBIAN_DIST_PACKAGES):
    """Make Debian's ``rados`` and ``rbd`` bindings importable in ``venv``, nothing else.

    Cinder's and Glance's RBD drivers import them, and they exist only as
    Debian packages built for Debian's CPython 3.11; another CPython 3.11
    loads them (same ABI tag). ``--system-site-packages`` would bring all of
    Debian's Python packages in with them, so a directory in the venv holds
    symlinks to just these two extension modules and a ``.pth`` file names
    it. Idempotent; returns that directory.
    """
    python = os.path.join(venv, "bin", "python")
    probe = subprocess.run(
        [python, "-c", "import sys, sysconfig; print(sysconfig.get_paths()['purelib']); "
                       "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True, text=True, check=True, timeout=60)
    site_packages, suffix = probe.stdout.split()
    links = os.path.join(venv, "debian-ceph")
    os.makedirs(links, exist_ok=True)
    for module in CEPH_MODULES:
        target = os.path.join(dist_packages, module + suffix)
        if not os.path.exists(target):
            raise RuntimeError(
                f"{target} not found: Debian's python3-{module} is missing, or {venv} is "
                f"not a CPython of the same version and ABI ({suffix})")
        link = os.path.join(links, module + suffix)
        if os.path.realpath(link) != os.path.realpath(target):
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)
    with open(os.path.join(site_packages, "debian-ceph.pth"), "w", encoding="utf-8") as f:
        f.write(links + "\n")
    return links


def main(argv=None):
    """``python -m volumesvc_aio.ceph``: run a one-node Ceph until interrupted."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m volumesvc_aio.ceph",
                                     description="A one-node Ceph under a state directory.")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--clean", action="store_true",
                        help="remove state-dir when stopped")
    args = parser.parse_args(argv)
    harness = CephHarness(args.state_dir)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    started = time.monotonic()
    try:
        with harness:
            print(f"Ceph ready in {time.monotonic() - started:.1f}s: conf {harness.conf_path}, "
                  f"admin keyring {harness.admin_keyring}; Ctrl-C stops it", flush=True)
            while all(p.running() for p in harness.processes):
                time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        if args.clean:
            harness.clean()
    return 0


if __name__ == "__main__":
    sys.exit(main())
