"""Make sure a libvirt daemon serves ``qemu:///system`` on this machine.

The embedded QEMU driver (``qemu:///embed``) cannot hand QEMU a Ceph secret,
so computes that open RBD volumes connect to ``qemu:///system`` as Nova's do:
through libvirtd, with virtlogd beside it (QEMU's console output goes through
virtlogd; a domain does not start without it). These machines have no
systemd, so :class:`LibvirtDaemon` starts Debian's binaries itself when no
daemon answers on the system socket, and stops only what it started: a
daemon that was already running is shared machine infrastructure and is left
alone. The traps are in ``doc/source/contributor/dependencies.rst`` ("libvirt
daemon").

The cluster deployment gives each emulated host a daemon of its own instead
(``host=`` a :class:`HostLayout`): started inside the host's network
namespace with its own directories bind-mounted over libvirt's system paths,
its own host UUID and a TCP listener on the host's address, so that two hosts
are two libvirt daemons that can reach each other as migration peers.

Several all-in-ones (and test sessions) on one machine share the one system
daemon. Each holds a shared lock on :data:`USERS_LOCK` while it uses it, and
the daemons volumesvc started stop only when the last user lets go: the first
all-in-one used to stop the daemon it had started under the others, whose
computes lost their hypervisor mid-run.
"""

import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

from volumesvc_aio import Harness, ProcessGroup, stop_all, system, wait_for

SYSTEM_URI = "qemu:///system"
RUN_DIR = "/run/libvirt"
LIBVIRTD_SOCKET = os.path.join(RUN_DIR, "libvirt-sock")
VIRTLOGD_SOCKET = os.path.join(RUN_DIR, "virtlogd-sock")
#: Held shared by every user of the daemon, exclusive by the one that stops it.
USERS_LOCK = os.path.join(RUN_DIR, "volumesvc-users.lock")
#: The process groups of the daemons volumesvc started (the last user stops them).
STARTED_FILE = os.path.join(RUN_DIR, "volumesvc-started.json")
# libvirtd exits at once when its log directory is missing.
SYSTEM_DIRS = ("/var/log/libvirt", "/var/lib/libvirt/qemu", "/var/cache/libvirt", RUN_DIR)
QEMU_CONF = "/etc/libvirt/qemu.conf"
# NOTE: without these libvirt runs QEMU as libvirt-qemu, which cannot open the
# root-only /dev/kvm here, and re-probes QEMU's capabilities on every call
# (tens of seconds per define).
QEMU_CONF_LINES = ('user = "root"', 'group = "root"')
#: Who may use the read-write socket: root and the ``libvirt`` group, in
#: which an unprivileged compute is (the group's membership is the
#: authorisation: no polkit on these machines). Debian's packaged
#: libvirtd.conf says the same.
SOCKET_ACCESS = (f'unix_sock_group = "{system.LIBVIRT_GROUP}"\n'
                 'unix_sock_rw_perms = "0770"\nauth_unix_rw = "none"\n')


def socket_answers(path, timeout=2.0) -> bool:
    """True when something accepts connections on UNIX socket ``path``."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
        except OSError:
            return False
    return True


def configured_qemu_group(path=None):
    """The ``group`` QEMU runs as by ``path`` (None: not set there, or no such file).

    ``path``: :data:`QEMU_CONF` by default.
    """
    try:
        with open(path or QEMU_CONF, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#") and key.strip() == "group":
            return value.strip().strip('"')
    return None


def ensure_qemu_conf(path=QEMU_CONF):
    """Have QEMU run as root unless the operator chose a user in ``path``.

    Returns True when the file was written or extended.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = None
    if text is not None and any(line.split("=")[0].strip() in ("user", "group")
                                for line in text.splitlines()
                                if "=" in line and not line.lstrip().startswith("#")):
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        if text and not text.endswith("\n"):
            f.write("\n")
        f.write("# Added by volumesvc: QEMU as root (no libvirt-qemu access to /dev/kvm).\n")
        f.write("\n".join(QEMU_CONF_LINES) + "\n")
    return True


# libvirt's system directories a host's daemon gets its own copy of, by the
# name of the copy under the host's state dir. /etc/libvirt holds the domain
# and secret definitions as well as qemu.conf.
HOST_MOUNTS = (("etc", "/etc/libvirt"), ("run", RUN_DIR), ("lib", "/var/lib/libvirt"),
               ("cache", "/var/cache/libvirt"), ("log", "/var/log/libvirt"))
# libvirtd's TCP port (its default) on the host's own address.
TCP_PORT = 16509


@dataclasses.dataclass(frozen=True)
class HostLayout:
    """Where and as what one emulated host's libvirt daemon runs.

    :param namespace: the host's network namespace; the daemon, its virtlogd
        and its QEMU processes run there, in a mount namespace of their own
        (``ip netns exec`` makes one) where the directories of
        :data:`HOST_MOUNTS` under ``state_dir`` replace libvirt's system ones.
        Nothing of it is visible from outside, and it goes away with the last
        process, so no mount is ever left behind.
    :param address: the host's address: libvirtd listens there on TCP
        (no authentication: the address is on a private bridge only) and QEMU
        takes incoming migrations there.
    :param host_uuid: what the daemon reports as its host UUID; libvirt
        refuses to migrate between two daemons reporting the same one.
    """

    namespace: str
    address: str
    host_uuid: str

    @staticmethod
    def uuid_for(state_dir, host):
        """A host UUID of its own for ``host``, the same on every start of one deployment."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"file://{state_dir}#{host}"))

    @property
    def tcp_uri(self):
        """How another host's daemon (or a client in another namespace) reaches this one."""
        return f"qemu+tcp://{self.address}/system"


def open_run_dir(path=None):
    """Let everyone reach the daemon's sockets (``RUN_DIR``); their own modes decide.

    A daemon that creates the directory itself does so under a umask of
    077, so a compute in the ``libvirt`` group was refused before it ever
    reached the group-owned socket. Debian's units give the directory
    0755; so does this, whoever made it (an earlier daemon's start
    included).
    """
    path = path or os.path.dirname(LIBVIRTD_SOCKET)
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o055 != 0o055:
        os.chmod(path, mode | 0o055)


class LibvirtDaemon(Harness):
    """libvirtd + virtlogd for ``qemu:///system``, started only if none runs.

    :param state_dir: our libvirtd.conf and the daemons' logs. The daemons'
        sockets and state stay in their system places (``/run/libvirt``,
        ``/var/lib/libvirt``): that is what ``qemu:///system`` means.
    :param host: a :class:`HostLayout`: instead, this host's own daemon, which
        this object always starts and stops and shares with no one; its
        sockets, state, logs and configuration all live under ``state_dir``.
    """

    LABEL = "libvirtd"
    READY_TIMEOUT = 60.0

    def __init__(self, state_dir, *, host=None):
        self.state_dir = os.path.abspath(state_dir)
        self.host = host
        self.log_dir = os.path.join(self.state_dir, "log")
        self.config_file = os.path.join(self.state_dir, "libvirtd.conf")
        if host is not None:
            self.config_file = os.path.join(self._own("etc"), "libvirtd.conf")
        self.processes = []
        # NOTE: the shared daemons never die with their starter: other users
        # may still need them (after a SIGKILL of the starter they stay until
        # the last user stops). A host's own daemon follows this flag.
        self.die_with_parent = False
        self._users_fd = None

    def _own(self, name):
        """This host's copy of one of libvirt's system directories (:data:`HOST_MOUNTS`)."""
        return os.path.join(self.state_dir, name)

    @property
    def socket(self):
        """libvirtd's read-write UNIX socket."""
        return os.path.join(self._own("run"), "libvirt-sock") if self.host else LIBVIRTD_SOCKET

    @property
    def uri(self):
        """The URI a compute on this host connects with (``[libvirt] connection_uri``).

        A host's own daemon is reached through its socket's real path,
        which is the same from every namespace.
        """
        if self.host is None:
            return SYSTEM_URI
        return f"qemu+unix:///system?socket={self.socket}"

    @property
    def started_here(self) -> bool:
        """Whether this object started (and so will stop) any daemon."""
        return bool(self.processes)

    def install(self):
        """Debian's libvirt daemon, QEMU driver and clients, and the libvirt-qemu user."""
        return system.ensure_system(rabbitmq=False, libvirt=True)

    def configure(self):
        os.makedirs(self.log_dir, exist_ok=True)
        if self.host is not None:
            self._configure_host()
            return
        with open(self.config_file, "w", encoding="utf-8") as f:
            # Everything else keeps libvirt's defaults (UNIX sockets only).
            f.write("# Written by volumesvc_aio.libvirtd\nlisten_tcp = 0\nlisten_tls = 0\n")
            f.write(SOCKET_ACCESS)

    def _configure_host(self):
        """libvirtd.conf and qemu.conf of a host's own daemon, in its own /etc/libvirt."""
        for name, _ in HOST_MOUNTS:
            os.makedirs(self._own(name), exist_ok=True)
        host = self.host
        with open(self.config_file, "w", encoding="utf-8") as f:
            f.write("\n".join([
                "# Written by volumesvc_aio.libvirtd for one emulated host",
                "listen_tls = 0", "listen_tcp = 1", f'listen_addr = "{host.address}"',
                f'tcp_port = "{TCP_PORT}"',
                # NOTE: no authentication: only the deployment's private
                # bridge reaches this address.
                'auth_tcp = "none"',
                f'host_uuid = "{host.host_uuid}"',
                # The host's compute runs as the services' user, in the group.
                SOCKET_ACCESS]))
        with open(os.path.join(self._own("etc"), "qemu.conf"), "w", encoding="utf-8") as f:
            f.write("\n".join([
                "# Written by volumesvc_aio.libvirtd for one emulated host",
                *QEMU_CONF_LINES,
                # Incoming migrations listen on the host's address (any port
                # of QEMU's default range), and the source is told that address
                # rather than this machine's host name.
                f'migration_address = "{host.address}"',
                f'migration_host = "{host.address}"', ""]))

    def _host_argv(self):
        """The command that runs virtlogd and libvirtd in the host's namespaces."""
        mounts = " && ".join(f"mount --bind {self._own(name)} {target}"
                             for name, target in HOST_MOUNTS)
        # NOTE: pid files in the host's own run directory: both daemons
        # otherwise lock /run/<daemon>.pid, which every host shares.
        script = (f"{mounts} && {{ virtlogd -p {RUN_DIR}/virtlogd.pid & }} && "
                  f"exec libvirtd --listen -p {RUN_DIR}/libvirtd.pid "
                  f"--config {self.config_file}")
        return ["ip", "netns", "exec", self.host.namespace, "sh", "-c", script]

    def _start(self, name, argv, sock):
        if socket_answers(sock):
            return
        proc = ProcessGroup(name, argv, os.path.join(self.log_dir, f"{name}.log"),
                            cwd=self.state_dir)
        self.processes.append(proc.start())
        _record_started(proc.pid)
        wait_for(lambda: socket_answers(sock), self.READY_TIMEOUT, interval=0.2,
                 what=f"{name} on {sock}", children=[proc], on_fail=self._logs)

    def start(self):
        """Start virtlogd and libvirtd (foreground, own process groups) where none answers.

        Registers this object as a user of the daemon first (shared lock), so
        that no other user's stop takes the daemon away from under it.
        """
        for path in SYSTEM_DIRS:
            os.makedirs(path, exist_ok=True)
        if self.host is not None:
            self._start_host()
            return
        open_run_dir()
        if self._users_fd is None:
            self._users_fd = os.open(USERS_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.flock(self._users_fd, fcntl.LOCK_SH)
        if socket_answers(LIBVIRTD_SOCKET) and socket_answers(VIRTLOGD_SOCKET):
            return
        if not socket_answers(LIBVIRTD_SOCKET):
            ensure_qemu_conf()
        self._start("virtlogd", ["virtlogd"], VIRTLOGD_SOCKET)
        self._start("libvirtd", ["libvirtd", "--config", self.config_file], LIBVIRTD_SOCKET)

    def _start_host(self):
        if self.processes:
            return
        # NOTE: the log of both daemons (stderr); QEMU's own logs are in
        # <state_dir>/log/qemu, the host's /var/log/libvirt/qemu.
        proc = ProcessGroup("libvirtd", self._host_argv(),
                            os.path.join(self.log_dir, "daemons.log"), cwd=self.state_dir,
                            die_with_parent=self.die_with_parent)
        self.processes.append(proc.start())
        wait_for(lambda: all(socket_answers(os.path.join(self._own("run"), sock))
                             for sock in ("libvirt-sock", "virtlogd-sock")),
                 self.READY_TIMEOUT, interval=0.2, what=f"libvirtd in {self.host.namespace}",
                 children=[proc], on_fail=self._logs)

    def stop(self):
        """Let go of the daemon; the last user stops the daemons volumesvc started.

        A host's own daemon is stopped at once, its guests first.

        The daemons of another all-in-one that was SIGKILLed are stopped here
        too when this is the last user (their process groups are recorded in
        :data:`STARTED_FILE`). A daemon volumesvc did not start is never stopped.
        """
        fd, self._users_fd = self._users_fd, None
        procs, self.processes = self.processes, []
        if self.host is not None:
            if procs:
                self.destroy_domains()
            stop_all([p.stop for p in procs])
            return
        if fd is None:
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # others still use it: leave our daemons running for them
            ours = {p.pid for p in procs}
            stop_all([p.stop for p in procs])
            for pgid in _take_started():
                if pgid not in ours:
                    _stop_group(pgid)
        finally:
            os.close(fd)

    def destroy_domains(self, timeout=60):
        """Destroy and undefine every domain of a host's own daemon (it serves no one else)."""
        virsh = ["virsh", "-c", self.uri]
        listed = subprocess.run([*virsh, "list", "--all", "--uuid"], capture_output=True,
                                text=True, timeout=timeout, check=False)
        for domain in listed.stdout.split():
            for step in ("destroy", "undefine"):
                subprocess.run([*virsh, step, domain], capture_output=True, timeout=timeout,
                               check=False)

    def _answers(self):
        result = subprocess.run(["virsh", "-c", self.uri, "version"], capture_output=True,
                                text=True, timeout=60, check=False)
        return result.returncode == 0

    def wait_ready(self, timeout=None):
        """Wait until ``virsh -c qemu:///system version`` answers (QEMU probed)."""
        wait_for(self._answers, self.READY_TIMEOUT if timeout is None else timeout,
                 what=f"libvirt at {self.uri}", on_fail=self._logs,
                 children=self.processes)
        return self


def _read_started():
    try:
        with open(STARTED_FILE, encoding="utf-8") as f:
            return list(json.load(f))
    except (FileNotFoundError, ValueError):
        return []


def _record_started(pgid):
    """Add ``pgid`` to :data:`STARTED_FILE` (the caller holds the users lock)."""
    pgids = sorted(set(_read_started()) | {pgid})
    with open(STARTED_FILE, "w", encoding="utf-8") as f:
        json.dump(pgids, f)


def _take_started():
    """The recorded process groups, emptying the record (caller holds the lock exclusively)."""
    pgids = _read_started()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(STARTED_FILE)
    return pgids


def _stop_group(pgid, timeout=10.0):
    """SIGTERM process group ``pgid``, SIGKILL it if it outlives ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def main(argv=None):
    """``python -m volumesvc_aio.libvirtd --state-dir D``: ensure the daemon, keep it up."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m volumesvc_aio.libvirtd",
                                     description="Run libvirtd for qemu:///system if none runs.")
    parser.add_argument("--state-dir", required=True)
    args = parser.parse_args(argv)
    daemon = LibvirtDaemon(args.state_dir)
    with daemon:
        if not daemon.started_here:
            print(f"{SYSTEM_URI} is already served by a running libvirtd", flush=True)
            return 0
        print(f"libvirtd serving {SYSTEM_URI} (logs in {daemon.log_dir}); Ctrl-C stops it",
              flush=True)
        try:
            while all(p.running() for p in daemon.processes):
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
