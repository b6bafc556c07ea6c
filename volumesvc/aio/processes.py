"""Child processes of the all-in-one: start in their own group, stop by group."""

import os
import signal
import subprocess
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Child:
    """One long-running child process whose output goes to a log file.

    Each child gets its own session (process group) so stopping it also stops
    whatever it spawned (gunicorn workers, QEMU helpers).
    """

    def __init__(self, name, argv, *, log_path, env=None, cwd=None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, cwd=self.cwd, start_new_session=True)
        finally:
            log.close()
        LOG.info("started %s (pid %d): %s", self.name, self.proc.pid, " ".join(self.argv))
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, signum):
        if self.alive():
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                pass

    def stop(self, timeout=15.0):
        """SIGTERM the group, wait, then SIGKILL what is left."""
        if self.proc is None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            LOG.warning("%s did not stop in %ss; killing it", self.name, timeout)
            self.signal(signal.SIGKILL)
            self.proc.wait(10)
        # The leader is gone; make sure no straggler of its group survives.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def tail(self, lines=20):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()[-8192:].decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(data.splitlines()[-lines:])


def wait_for(predicate, *, timeout, interval=0.5, what="condition", children=()):
    """Poll ``predicate`` until true; fail early if a child died."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except Exception as exc:  # noqa: BLE001 - not ready yet
            last = exc
        else:
            last = None
        for child in children:
            if child.proc is not None and not child.alive():
                raise RuntimeError(
                    f"{child.name} exited with {child.proc.returncode} while waiting for "
                    f"{what}; last log lines:\n{child.tail()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}"
                               + (f": {last}" if last else ""))
        time.sleep(interval)
