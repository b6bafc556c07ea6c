"""Prometheus metrics of one RPC service process (conductor or compute).

Why a module of its own: the conductor and the compute are single
processes, unlike the API's gunicorn workers (``serving/metrics.py``), so each
keeps its values in memory on a registry of its own (no process-wide
state) and serves them from a small HTTP server on its own port
(``[metrics] conductor_listen_port`` / ``compute_listen_port``). The values
are recorded whether or not they are served: one histogram observation is
microseconds next to an RPC round trip, and tests read them without a port.

What every RPC service measures is the handling of each RPC message
(:class:`ObservedDispatcher`); the compute adds its own families
(``compute/metrics.py``). doc/source/admin/monitoring.rst lists them.
"""

import functools
import time

import prometheus_client as prom
from oslo_log import log as logging

from volumesvc.common import outage, profiler

LOG = logging.getLogger(__name__)

RPC_DURATION = "volumesvc_rpc_server_duration_seconds"

# Seconds: a persistence call takes milliseconds, an attach task seconds, a
# boot from a large image minutes.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
           120.0, 300.0)

SUCCESS = "success"
ERROR = "error"


class ServiceMetrics:
    """The metric families every RPC service has, and the scrape endpoint.

    ``binary`` is not a label: one process is one binary, and Prometheus
    adds the scrape target's own labels (job, instance).
    """

    def __init__(self):
        self.registry = prom.CollectorRegistry()
        self.rpc_duration = prom.Histogram(
            RPC_DURATION,
            "Time this service spent handling one RPC message, by method, kind (call: "
            "the sender waits for the answer; cast: it does not) and outcome (error: the "
            "handler raised). For the conductor a cast's duration is its task's.",
            ["method", "kind", "outcome"], buckets=BUCKETS, registry=self.registry)
        self._server = None

    def families(self) -> tuple[str, ...]:
        return (RPC_DURATION,)

    def observe_rpc(self, method, kind, outcome, seconds) -> None:
        self.rpc_duration.labels(method=method, kind=kind, outcome=outcome).observe(seconds)

    def exposition(self) -> bytes:
        return prom.generate_latest(self.registry)

    def serve(self, host, port) -> None:
        """Answer scrapes on ``host:port`` from a daemon thread (until :meth:`stop`).

        A port already taken is logged, not fatal: the service does its
        work without its metrics rather than not at all.
        """
        try:
            self._server, _thread = prom.start_http_server(port, addr=host,
                                                           registry=self.registry)
        except OSError as exc:
            LOG.error("Cannot serve metrics on %s:%s: %s", host, port, exc)
            return
        LOG.info("Metrics at http://%s:%d/metrics", host, self._server.server_port)

    @property
    def port(self) -> int | None:
        return self._server.server_port if self._server else None

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def rpc_kind(incoming) -> str:
    """``call`` when the sender waits for a reply, else ``cast``.

    The AMQP driver keeps the reply's message id (none for a cast), the
    in-memory ``fake:`` driver a reply queue.
    """
    if getattr(incoming, "orig_msg_id", None) or getattr(incoming, "_reply_q", None):
        return "call"
    return "cast"


class ObservedDispatcher(outage.TypedFailureDispatcher):
    """The RPC servers' dispatcher (``outage``), timing each message for ``metrics``.

    An RPC server built with it (``rpc.get_server(observer=...)``) behaves
    exactly like one built without; only the timing is added.
    """

    def __init__(self, endpoints, serializer, metrics: ServiceMetrics):
        super().__init__(endpoints, serializer)
        self._metrics = metrics

    def dispatch(self, incoming):
        method = str(incoming.message.get("method"))
        kind = rpc_kind(incoming)
        started = time.monotonic()
        outcome = ERROR
        try:
            with profiler.rpc_span(incoming.ctxt, method, kind):
                result = super().dispatch(incoming)
            outcome = SUCCESS
            return result
        finally:
            seconds = time.monotonic() - started
            self._metrics.observe_rpc(method, kind, outcome, seconds)
            # In the handler's thread: oslo.log adds the message's request ids, so
            # with debug on every message has a line in the operation's trail.
            LOG.debug("RPC %s %s handled in %.3fs: %s", kind, method, seconds, outcome)


class Timed:
    """``target`` with each public method call timed into ``histogram``.

    Each call is also a span ``name`` of the thread's trace, if it has one.

    Attributes that are not methods (a driver's ``capabilities``) pass
    through untouched. Wrapping an already wrapped object wraps what it
    wraps, so a reused driver is never counted twice.
    """

    def __init__(self, target, histogram, name):
        self.__wrapped__ = getattr(target, "__wrapped__", target)
        self._histogram = histogram
        self._name = name

    def __getattr__(self, name):
        value = getattr(self.__wrapped__, name)
        if name.startswith("_") or not callable(value):
            return value
        histogram, span = self._histogram, self._name

        @functools.wraps(value)
        def timed(*args, **kwargs):
            started = time.monotonic()
            result = ERROR
            try:
                with profiler.span(span, name):
                    returned = value(*args, **kwargs)
                result = SUCCESS
                return returned
            finally:
                histogram.labels(call=name, result=result).observe(time.monotonic() - started)
        return timed
