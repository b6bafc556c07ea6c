"""Running one RPC service process: server, heartbeat and graceful stop.

Each ``volumesvc-conductor`` / ``volumesvc-compute`` process owns exactly one
:class:`RPCService`. It starts the oslo.messaging server on the threading
executor, heartbeats the service record every ``report_interval`` seconds
from a daemon thread, runs the manager's periodic tasks
(:mod:`volumesvc.periodic`), and on SIGTERM or SIGINT stops taking new
messages and starting periodic runs, waits up to ``graceful_shutdown_timeout``
for the handlers and runs already going and only then lets the process exit.
"""

import signal
import threading
import time
from collections.abc import Callable

from oslo_log import log as logging

from volumesvc import context as vs_context
from volumesvc import periodic, rpc, version
from volumesvc.common import systemd

LOG = logging.getLogger(__name__)


class RPCService:
    """One RPC server plus its heartbeat and its manager's periodic tasks.

    ``heartbeat`` is a callable ``(context, host, binary, topic, version,
    capabilities)`` that persists the service record: the conductor writes
    the database directly, a compute asks the conductor over RPC.
    """

    def __init__(self, conf, *, binary, topic, manager, transport, heartbeat,
                 capabilities=None, owns_transport=True, extra_topics=(), metrics=None,
                 metrics_address=None):
        self.conf = conf
        self.binary = binary
        self.topic = topic
        self.host = conf.host
        self.manager = manager
        self._transport = transport
        self._owns_transport = owns_transport
        self._heartbeat = heartbeat
        self._capabilities: Callable[[], dict] = capabilities or (lambda: {})
        self._stopping = threading.Event()
        self._extra_topics = tuple(extra_topics)
        # common/metrics.py: RPC timings always; served on (host, port) if given.
        self.metrics = metrics
        self._metrics_address = metrics_address
        # Monotonic time of the last heartbeat that was persisted, and why
        # the last one failed: what ``health`` judges by.
        self._beat_ok_at: float | None = None
        self._beat_error = "no heartbeat yet"
        self._watchdog = systemd.Watchdog(systemd.Notifier(), self.health, binary)
        self._servers = []
        self._beat_thread = None
        self._periodic = periodic.PeriodicRunner(
            periodic.tasks_of(manager, conf), context_factory=vs_context.get_admin_context,
            thread_prefix=binary)

    def start(self):
        init_host = getattr(self.manager, "init_host", None)
        if init_host:
            init_host()
        # NOTE: the first heartbeat happens before the server accepts work so
        # that ``service list`` shows the service (and its capabilities) as
        # soon as it can act on requests.
        self.report_state()
        # NOTE: one RPC server (and so one executor thread pool) per topic:
        # work on one topic can never take the threads another topic needs.
        for topic in (self.topic, *self._extra_topics):
            server = rpc.get_server(self._transport, topic, self.host, [self.manager],
                                    version=self.manager.target.version,
                                    observer=self.metrics)
            server.start()
            self._servers.append(server)
        # The manager's first words once it takes work (a compute's
        # ``compute_started``); never fatal.
        serving = getattr(self.manager, "serving", None)
        if serving:
            serving(vs_context.get_admin_context())
        self._beat_thread = threading.Thread(
            target=self._beat_loop, name=f"{self.binary}-heartbeat", daemon=True)
        self._beat_thread.start()
        self._periodic.start()
        if self.metrics is not None and self._metrics_address:
            self.metrics.serve(*self._metrics_address)
        LOG.info("%s started on host %s (topic %s, service version %d)",
                 self.binary, self.host, self.topic, version.SERVICE_VERSION)
        self._watchdog.start()

    def health(self) -> tuple[bool, str]:
        """(healthy, why) for systemd's watchdog (``common/systemd.py``).

        Healthy: the RPC servers consume and a heartbeat was persisted within
        ``service_down_time``. The conductor's heartbeat is a database
        write, a compute's a call to a conductor over RabbitMQ: failing for
        that long, the service is shown down anyway.
        """
        if self._stopping.is_set():
            return False, "stopping"
        if not self._servers:
            return False, "RPC servers not started"
        if self._beat_ok_at is None or (time.monotonic() - self._beat_ok_at
                                        > self.conf.service_down_time):
            return False, f"heartbeat failing: {self._beat_error}"
        return True, f"serving topic {self.topic} on {self.host}"

    def report_state(self):
        """Persist one heartbeat; failures are logged, never fatal."""
        try:
            self._heartbeat(
                vs_context.get_admin_context(), host=self.host, binary=self.binary,
                topic=self.topic, version=version.SERVICE_VERSION,
                capabilities=self._capabilities())
        except Exception as exc:  # noqa: BLE001 - a missed beat must not kill us
            LOG.warning("Heartbeat of %s on %s failed: %s", self.binary, self.host, exc)
            self._beat_error = f"{type(exc).__name__}: {exc}"[:200]
            return False
        self._beat_ok_at = time.monotonic()
        self._beat_error = "the last heartbeat is still unanswered"
        return True

    def _beat_loop(self):
        while not self._stopping.wait(self.conf.report_interval):
            self.report_state()

    def stop(self):
        """Stop taking messages and wait for the running handlers (bounded)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._watchdog.stop()
        self._periodic.stop()
        LOG.info("Stopping %s on %s", self.binary, self.host)
        # NOTE: one server at a time, the main topic first: its running
        # handlers (a conductor's attach task waiting on a compute) may need
        # the extra topics (the compute's persistence calls) to finish.
        # Stopping those too would leave the compute's calls queued for the
        # next conductor, whose answers go to a caller that is gone: a BDM
        # with no Cinder attachment.
        deadline = time.monotonic() + self.conf.graceful_shutdown_timeout
        pending = list(self._servers)
        while pending:
            server = pending.pop(0)
            server.stop()
            waiter = threading.Thread(target=server.wait, daemon=True)
            waiter.start()
            waiter.join(max(0.0, deadline - time.monotonic()))
            if waiter.is_alive():
                LOG.warning("RPC handlers still running after %ss; exiting anyway",
                            self.conf.graceful_shutdown_timeout)
                for rest in pending:
                    rest.stop()
                break
        # NOTE: periodic runs already going get what is left of the same
        # deadline: the whole stop stays within graceful_shutdown_timeout.
        self._periodic.wait(deadline - time.monotonic())
        if self.metrics is not None:
            self.metrics.stop()
        cleanup = getattr(self.manager, "cleanup_host", None)
        if cleanup:
            cleanup()
        if self._owns_transport:
            self._transport.cleanup()


def serve(service):
    """Start ``service`` and block until SIGTERM/SIGINT, then stop it."""
    done = threading.Event()

    def _handle(signum, frame):
        LOG.info("Caught signal %d, stopping", signum)
        done.set()

    signal.signal(signal.SIGTERM, _handle)
    signal.signal(signal.SIGINT, _handle)
    service.start()
    # NOTE: Event.wait with a timeout in a loop keeps the main thread able to
    # run the Python signal handler promptly.
    while not done.wait(1.0):
        pass
    service.stop()
