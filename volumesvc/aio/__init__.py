"""Run the single-machine (all-in-one) dependencies: RabbitMQ, Cinder, Glance.

The harnesses here install real OpenStack services from PyPI into their own
virtualenvs (they must never share volumesvc's: their pins differ), write
their configuration, start them in separate process groups and stop them by
group. Used by ``volumesvc-aio`` and by the integration tests.

This module holds the pieces both harnesses share: the dependency cache,
virtualenv installs guarded by a marker file, process groups, HTTP probes.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

# A pip that runs with this on its PATH finds our venv's interpreter first,
# which is not what we want: always build venvs from the base interpreter.
_BASE_PYTHON = os.path.join(sys.base_prefix, "bin", "python3")


def deps_dir(explicit=None) -> str:
    """Where virtualenvs are cached: argument, ``$VOLUMESVC_DEPS_DIR``, ``~/.cache/volumesvc``."""
    return os.path.abspath(os.path.expanduser(
        explicit or os.environ.get("VOLUMESVC_DEPS_DIR") or "~/.cache/volumesvc"))


def install_venv(venv_dir, requirements, log=None) -> bool:
    """Create ``venv_dir`` with ``requirements`` unless its marker says it is done.

    The marker records the exact requirement list, so changing a pin
    reinstalls, and a half-finished install (no marker) is retried. Returns
    True when something was installed.
    """
    marker = os.path.join(venv_dir, ".volumesvc-installed.json")
    wanted = {"requirements": list(requirements)}
    try:
        with open(marker) as f:
            if json.load(f) == wanted:
                return False
    except (OSError, ValueError):
        pass
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


def free_port(host="127.0.0.1") -> int:
    """A TCP port nothing listens on right now (racy, but fine for tests)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def http_json(url, headers=None, timeout=5.0):
    """GET ``url`` → (status, parsed JSON or None). Connection errors give (None, None)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
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

    def __init__(self, name, argv, log_path, env=None, cwd=None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env,
                                         cwd=self.cwd, start_new_session=True)
        finally:
            log.close()
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
