"""systemd's service notification protocol for volumesvc-conductor and volumesvc-compute.

Why: under ``Type=notify`` systemd counts a service started only once it
says ``READY=1`` (here: once its RPC servers consume), and with
``WatchdogSec=`` it restarts a service that stops sending ``WATCHDOG=1``.
The services send it only while they are healthy (``RPCService.health``),
so a process that is alive but cannot do its work (its heartbeats have been
failing for ``service_down_time``) is restarted like a hung one, and
``systemctl status`` shows why in the ``STATUS=`` line.

The protocol is one datagram per message on the unix socket named by
``$NOTIFY_SOCKET`` (``@`` starts an abstract name); without that variable
(not started by systemd) every call does nothing. No library is needed for
it, so there is none.
"""

import os
import socket
import threading
from collections.abc import Callable

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Notifier:
    """Sends notification messages to systemd, if systemd asked for them."""

    def __init__(self, environ=None):
        environ = os.environ if environ is None else environ
        self.address = environ.get("NOTIFY_SOCKET") or None
        if self.address and self.address.startswith("@"):
            self.address = "\0" + self.address[1:]
        self.watchdog_seconds = _watchdog_seconds(environ)

    def send(self, *lines: str) -> bool:
        if not self.address:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto("\n".join(lines).encode(), self.address)
        except OSError as exc:
            LOG.warning("Could not notify systemd at %s: %s", self.address, exc)
            return False
        return True


def _watchdog_seconds(environ) -> float | None:
    """``WatchdogSec`` of this process in seconds, or None when there is none for it."""
    usec = environ.get("WATCHDOG_USEC")
    pid = environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        seconds = int(usec) / 1e6
    except ValueError:
        return None
    return seconds if seconds > 0 else None


class Watchdog:
    """READY once started, then ``WATCHDOG=1`` every half ``WatchdogSec`` while healthy.

    ``health`` returns ``(healthy, status text)``; the status goes to
    systemd whenever it changes, a warning to the log when health is lost.
    """

    def __init__(self, notifier: Notifier, health: Callable[[], tuple[bool, str]],
                 name: str):
        self._notifier = notifier
        self._health = health
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_status: str | None = None

    def start(self) -> "Watchdog":
        healthy, status = self._health()
        self._last_status = status
        self._notifier.send("READY=1", f"STATUS={status}")
        if self._notifier.watchdog_seconds:
            self._thread = threading.Thread(target=self._loop, name=f"{self._name}-watchdog",
                                            daemon=True)
            self._thread.start()
        return self

    def _loop(self):
        interval = (self._notifier.watchdog_seconds or 0) / 2
        while not self._stop.wait(interval):
            self.check()

    def check(self) -> bool:
        """Ping systemd if healthy; tell it the status when that changed."""
        healthy, status = self._health()
        lines = ["WATCHDOG=1"] if healthy else []
        if status != self._last_status:
            lines.append(f"STATUS={status}")
            if not healthy:
                LOG.warning("%s unhealthy, not pinging the systemd watchdog: %s",
                            self._name, status)
            self._last_status = status
        if lines:
            self._notifier.send(*lines)
        return healthy

    def stop(self):
        self._stop.set()
        self._notifier.send("STOPPING=1", "STATUS=stopping")
