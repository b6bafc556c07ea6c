"""Run the single-machine (all-in-one) dependencies: RabbitMQ, Cinder, Glance.

The harnesses here install real OpenStack services from PyPI into their own
virtualenvs (they must never share volumesvc's: their pins differ), write
their configuration, start them in separate process groups and stop them by
group. Used by ``volumesvc-aio`` and by the integration tests.

This module holds the pieces both harnesses share: the dependency cache,
virtualenv installs guarded by a marker file, process groups, HTTP probes,
and :class:`ServiceHarness`, their common lifecycle.
"""

import collections
import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from volumesvc_aio import priority

# A pip that runs with this on its PATH finds our venv's interpreter first,
# which is not what we want: always build venvs from the base interpreter.
_BASE_PYTHON = os.path.join(sys.base_prefix, "bin", "python3")


def deps_dir(explicit=None) -> str:
    """Where virtualenvs are cached: argument, ``$VOLUMESVC_DEPS_DIR``, ``~/.cache/volumesvc``."""
    return os.path.abspath(os.path.expanduser(
        explicit or os.environ.get("VOLUMESVC_DEPS_DIR") or "~/.cache/volumesvc"))


_cache_dir = deps_dir  # the harnesses' ``deps_dir`` keyword shadows the function


def install_venv(venv_dir, requirements, log=None) -> bool:
    """Create ``venv_dir`` with ``requirements`` unless its marker says it is done.

    The marker records the exact requirement list, so changing a pin
    reinstalls, and a half-finished install (no marker) is retried. Returns
    True when something was installed.
    """
    marker = os.path.join(venv_dir, ".volumesvc-installed.json")
    wanted = {"requirements": list(requirements)}
    if _venv_done(marker, wanted):
        return False
    # Two test runs (or an all-in-one and a test run) on one machine may want
    # the same virtualenv at once: one installs, the other waits and reuses it.
    os.makedirs(os.path.dirname(os.path.abspath(venv_dir)), exist_ok=True)
    with open(os.path.abspath(venv_dir) + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _venv_done(marker, wanted):
            return False
        return _install_venv(venv_dir, requirements, log, marker, wanted)


def _venv_done(marker, wanted) -> bool:
    try:
        with open(marker) as f:
            return json.load(f) == wanted
    except (OSError, ValueError):
        return False


def _install_venv(venv_dir, requirements, log, marker, wanted) -> bool:
    python = os.path.join(venv_dir, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([_BASE_PYTHON, "-m", "venv", venv_dir], check=True)
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        result = subprocess.run(
            [python, "-m", "pip", "install", "--disable-pip-version-check", "-q",
             *requirements], stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log:
            out.close()
    if result.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(requirements)} into {venv_dir} failed"
                           + (f"; see {log}" if log else ""))
    with open(marker, "w") as f:
        json.dump(wanted, f)
    return True


def frozen_requirements(path):
    """The ``name==version`` lines of a frozen requirements file next to a harness.

    Installed as the exact requirement list, so the venv marker changes
    (and the venv is rebuilt) only when the file does.
    """
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


_EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
# NOTE: the ports this process handed out lately, so that two calls made
# before either server binds never get the same one. Harness-only state.
_RECENT_PORTS: collections.deque = collections.deque(maxlen=256)
_RECENT_LOCK = threading.Lock()


def _ephemeral_low() -> int:
    try:
        with open(_EPHEMERAL_RANGE_FILE) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host="127.0.0.1") -> int:
    """A TCP port nothing listens on right now, below the kernel's ephemeral range.

    The caller starts a server on it seconds later. A port from the
    ephemeral range (what binding port 0 gives) can meanwhile become the
    local end of one of the many outgoing connections a test run makes (to
    the databases, RabbitMQ, the services), and the server then fails to
    bind. Outgoing connections never take a port below that range.
    """
    low = _ephemeral_low()
    first = max(10000, low - 12000)
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(first, low)
        with _RECENT_LOCK:
            if port in _RECENT_PORTS:
                continue
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
            _RECENT_PORTS.append(port)
            return port
    raise RuntimeError(f"no free TCP port on {host} in {first}-{low - 1}")


def http_json(url, headers=None, timeout=5.0, context=None):
    """GET ``url`` → (status, parsed JSON or None). Connection errors give (None, None).

    ``context``: the SSL context an ``https`` URL's server is verified with
    (a deployment's own CA).
    """
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    except (OSError, urllib.error.URLError):
        return None, None
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, None


class ProcessGroup:
    """One service process in its own process group, logging to a file.

    A group (not a pid) is stopped so that workers forked by the service die
    with it.
    """

    def __init__(self, name, argv, log_path, env=None, cwd=None, nice=0,
                 die_with_parent=False):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        # CPU priority (volumesvc_aio.priority): 0 for the request path.
        self.nice = nice
        # SIGTERM when the thread that started it dies (PR_SET_PDEATHSIG):
        # for volumesvc-aio, whose services must not outlive a SIGKILL of it.
        self.die_with_parent = die_with_parent
        self.proc = None

    def _argv(self):
        argv = priority.niced_argv(self.argv, self.nice)
        if self.die_with_parent and shutil.which("setpriv"):
            argv = ["setpriv", "--pdeathsig", "TERM", *argv]
        return argv

    def start(self):
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self._argv(), stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=self.env, cwd=self.cwd, start_new_session=True)
        finally:
            log.close()
        priority.apply(self.proc.pid, self.nice)
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def signal(self, signum):
        """Send ``signum`` to the whole group (no-op when it is not running)."""
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signum)

    def tail(self, lines=30) -> str:
        with contextlib.suppress(OSError), open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
        return ""

    def stop(self, timeout=10.0):
        if self.proc is None:
            return
        pgid = self.proc.pid  # start_new_session: the pid is the group id
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # Workers may outlive the leader for a moment; make sure none stays.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        self.proc = None


def wait_for(predicate, timeout, interval=0.5, what="condition", on_fail=None,
             children=()):
    """Poll ``predicate`` until it returns truthy; raise TimeoutError with context.

    An exception from ``predicate`` counts as "not yet" (a service still
    starting refuses connections) and is reported if time runs out. If one of
    ``children`` (ProcessGroups) exits meanwhile, fail at once with its log.
    """
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            result = predicate()
        except Exception as exc:  # noqa: BLE001 - not ready yet
            result, last_error = None, exc
        if result:
            return result
        for child in children:
            if child.proc is not None and not child.running():
                raise RuntimeError(
                    f"{child.name} exited with {child.proc.returncode} while waiting for "
                    f"{what}; last log lines:\n{child.tail()}")
        if time.monotonic() >= deadline:
            extra = on_fail() if on_fail else ""
            if last_error is not None:
                extra = f"last error: {last_error}\n{extra}"
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}\n{extra}")
        time.sleep(interval)


class Harness:
    """The lifecycle every harness shares: processes started, stopped, cleaned.

    A subclass supplies ``install()``, ``configure()``, ``start()`` (appending
    each :class:`ProcessGroup` it starts to ``self.processes``) and
    ``wait_ready()``; ``setup``, ``stop``, ``clean`` and the ``with`` form are
    written once here.
    """

    state_dir: str
    processes: list

    def install(self):
        raise NotImplementedError

    def configure(self):
        raise NotImplementedError

    def start(self):
        raise NotImplementedError

    def wait_ready(self, timeout=None):
        raise NotImplementedError

    def _check_alive(self):
        for proc in self.processes:
            if not proc.running():
                raise RuntimeError(f"{proc.name} exited early:\n{proc.tail()}")

    def _logs(self):
        """What a readiness timeout reports: the tail of every process's log."""
        return "\n".join(f"--- {p.name}\n{p.tail()}" for p in self.processes)

    def stop(self):
        """SIGTERM each process group (in parallel), SIGKILL what remains."""
        procs, self.processes = self.processes, []
        stop_all([p.stop for p in procs])

    def clean(self):
        """Remove state_dir (stop first)."""
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def setup(self, timeout=None):
        """install + configure + start + wait_ready; stops what started on failure."""
        self.install()
        self.configure()
        try:
            self.start()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self):
        return self.setup()

    def __exit__(self, *exc):
        self.stop()


class ServiceHarness(Harness):
    """What the Cinder and Glance harnesses share: venv, db sync, process groups, lifecycle.

    A subclass names its service (``LABEL``, ``VERSION``, ``REQUIREMENTS``,
    ``DB_SYNC`` = the ``<project>-manage`` arguments) and supplies
    ``config_file``, ``url``, ``configure()``, ``_commands()`` (name → argv
    of each process) and ``_ready()``; install/start/stop/clean/setup and the
    ``with`` form are written once here so the two harnesses cannot drift apart.
    """

    LABEL = None            # "Cinder"; also names the venv and the manage tool
    VERSION = None
    REQUIREMENTS = ()
    DB_SYNC = ("db", "sync")
    READY_TIMEOUT = 60.0

    def __init__(self, state_dir, port, deps_dir=None):
        self.state_dir = os.path.abspath(state_dir)
        self.port = int(port)
        self.venv = os.path.join(_cache_dir(deps_dir),
                                 f"{self.LABEL.lower()}-{self.VERSION}")
        self.log_dir = os.path.join(self.state_dir, "log")
        self.processes = []
        # Lower CPU priority for these processes (volumesvc_aio.priority); set
        # before start(). Off by default: the integration tests want none.
        self.background_priority = False
        # Its processes get SIGTERM if the thread that started them dies
        # (ProcessGroup.die_with_parent); volumesvc-aio sets it.
        self.die_with_parent = False

    def _bin(self, name):
        return os.path.join(self.venv, "bin", name)

    def install(self) -> bool:
        """Create the cached virtualenv (tens of seconds once, then nothing)."""
        os.makedirs(self.log_dir, exist_ok=True)
        try:
            return install_venv(self.venv, self.REQUIREMENTS,
                                log=os.path.join(self.log_dir, "install.log"))
        except (RuntimeError, OSError) as e:
            raise RuntimeError(f"Cannot install {self.LABEL} {self.VERSION}: {e}") from e

    def _env(self):
        """os.environ with the service's venv first on PATH (never ours)."""
        env = dict(os.environ)
        env["PATH"] = os.path.join(self.venv, "bin") + os.pathsep + env.get("PATH", "")
        env.pop("VIRTUAL_ENV", None)
        return env

    def db_sync(self):
        manage = f"{self.LABEL.lower()}-manage"
        result = subprocess.run([self._bin(manage), "--config-file", self.config_file,
                                 *self.DB_SYNC], env=self._env(), capture_output=True,
                                text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"{manage} {' '.join(self.DB_SYNC)} failed:\n"
                               f"{result.stderr[-3000:]}")

    def start(self):
        """db sync, then each process of ``_commands()`` in its own process group."""
        if self.processes:
            raise RuntimeError(f"{self.LABEL} harness already started")
        if not os.path.exists(self.config_file):
            self.configure()
        self.db_sync()
        env = self._env()
        for name, argv in self._commands():
            proc = ProcessGroup(name, argv, os.path.join(self.log_dir, f"{name}.log"),
                                env=env, cwd=self.state_dir,
                                nice=priority.nice_for(name, self.background_priority),
                                die_with_parent=self.die_with_parent)
            self.processes.append(proc.start())

    def kill(self, name, signum=signal.SIGKILL):
        """Kill one process group of the service (resilience tests); see ``respawn``."""
        proc = next(p for p in self.processes if p.name == name)
        proc.signal(signum)
        proc.proc.wait(30)

    def respawn(self, name):
        """Start a killed process again, with the same command line and log."""
        next(p for p in self.processes if p.name == name).start()

    def wait_ready(self, timeout=None):
        wait_for(self._ready, self.READY_TIMEOUT if timeout is None else timeout,
                 what=f"{self.LABEL} on port {self.port}", on_fail=self._logs)
        return self

    def run_foreground(self, clean=False, install_only=False):
        """The ``python -m volumesvc_aio.<service>`` body: run until interrupted."""
        if clean:
            self.clean()
        started = time.monotonic()
        self.install()
        print(f"installed in {self.venv} ({time.monotonic() - started:.1f}s)", flush=True)
        if install_only:
            return 0
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        started = time.monotonic()
        with self:
            print(f"{self.LABEL} ready at {self.url} in {time.monotonic() - started:.1f}s "
                  f"(logs in {self.log_dir}); Ctrl-C stops it", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while all(p.running() for p in self.processes):
                    time.sleep(1)
        return 0


def pids_naming(root, program=None):
    """PIDs of processes whose command line names files under ``root`` (and ``program``)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if root in cmdline and (program is None or program in cmdline):
            pids.append(int(entry))
    return pids


def qemu_pids(root):
    """PIDs of QEMU processes whose command line names files under ``root``."""
    return pids_naming(root, "qemu-system")


def stop_all(stops, timeout=None):
    """Call every ``stop`` callable at once, each in a thread; wait up to ``timeout`` for each.

    One after another, each would wait for the graceful stop of the ones
    before it.
    """
    threads = [threading.Thread(target=stop, daemon=True) for stop in stops]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)


def stop_qemu_guests(root, timeout=10.0):
    """SIGTERM the QEMU processes under ``root``, SIGKILL what is left after ``timeout``.

    In production guests outlive their compute agent on purpose; a harness
    owns its whole machine state, so nothing of it may stay.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in qemu_pids(root):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while qemu_pids(root) and time.monotonic() < deadline and sig == signal.SIGTERM:
            time.sleep(0.2)


def single_process_main(harness_cls, module, description, argv=None):
    """``python -m volumesvc_aio.<module>`` for a one-process harness (Glance, Keystone).

    Both take the same arguments (no RabbitMQ, no peers), so the command
    line is written once.
    """
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m volumesvc_aio.{module}",
                                     description=description)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--database-connection")
    parser.add_argument("--deps-dir")
    parser.add_argument("--install-only", action="store_true")
    parser.add_argument("--clean", action="store_true", help="wipe state-dir first")
    args = parser.parse_args(argv)
    harness = harness_cls(args.state_dir, port=args.port or free_port(),
                          database_connection=args.database_connection,
                          deps_dir=args.deps_dir)
    return harness.run_foreground(clean=args.clean, install_only=args.install_only)
