"""The API's Prometheus metrics (doc/source/admin/monitoring.rst lists them).

One :class:`Metrics` per app, on a registry of its own (no process-wide
state), built only with ``[metrics] enabled``. Under ``volumesvc-api`` the
gunicorn workers are separate processes: :func:`prepare_multiprocess` puts
prometheus_client in multiprocess mode before the app is loaded, every
worker then writes its values to files in one directory, and a scrape,
whichever worker answers it, reads all of them. The master removes a dead
worker's live gauges (:func:`child_exit`) and counts the replacement.

prometheus_client is imported only from here and only once the mode is
chosen: it picks file-backed or in-memory values when it is first imported.
"""

import contextlib
import os
import shutil

from volumesvc.api import auth
from volumesvc.api.policies import metrics as metrics_policy

ENV_DIR = "PROMETHEUS_MULTIPROC_DIR"

REQUEST_DURATION = "volumesvc_api_request_duration_seconds"
IN_FLIGHT = "volumesvc_api_requests_in_flight"
WORKER_REPLACEMENTS = "volumesvc_api_worker_replacements_total"
# Every family a scrape shows, as exposed: the doc lists exactly these.
FAMILIES = (REQUEST_DURATION, IN_FLIGHT, WORKER_REPLACEMENTS)

# Seconds: an attach at 2.101 answers in tens of ms, a slow Cinder in seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def multiprocess_dir(conf) -> str:
    return conf.metrics.multiprocess_dir or os.path.join(conf.state_path, "api-metrics")


def prepare_multiprocess(conf) -> str | None:
    """Empty the metrics directory and select multiprocess mode (before workers fork).

    Leftover files of an earlier run would add its counts to this one's.
    Returns the directory, or None with metrics off.
    """
    if not conf.metrics.enabled:
        return None
    path = multiprocess_dir(conf)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    os.environ[ENV_DIR] = path
    return path


def child_exit(server, worker):
    """gunicorn's ``child_exit`` hook (in the master): forget the worker, count it."""
    from prometheus_client import multiprocess

    path = os.environ.get(ENV_DIR)
    if path:
        multiprocess.mark_process_dead(worker.pid, path)
    # server.app is gunicorn's application object; callable is what it loaded.
    metrics = getattr(getattr(server.app, "callable", None), "metrics", None)
    if metrics is not None:
        metrics.worker_replacements.inc()


class Metrics:
    """The metric families of one API app and the scrape of them."""

    def __init__(self, conf):
        import prometheus_client as prom

        self.path = conf.metrics.path
        if not self.path.startswith("/") or self.path.startswith(("/v2", "/healthcheck")):
            raise ValueError(f"[metrics] path {self.path!r}: expected a path starting "
                             "with / outside /v2... and /healthcheck")
        self.multiprocess_dir = os.environ.get(ENV_DIR)
        self.registry = prom.CollectorRegistry()
        self.request_duration = prom.Histogram(
            REQUEST_DURATION,
            "Time from a request entering the API to its response being ready, "
            "by route template, method, status and microversion.",
            ["route", "method", "status", "microversion"],
            buckets=BUCKETS, registry=self.registry)
        self.in_flight = prom.Gauge(
            IN_FLIGHT, "Requests handed to a worker's thread pool and not answered yet, "
            "by pool (read: GET and HEAD; write: everything else).",
            ["pool"], multiprocess_mode="livesum", registry=self.registry)
        self.worker_replacements = prom.Counter(
            WORKER_REPLACEMENTS,
            "API worker processes that exited and were replaced by the master "
            "(max_requests, memory bound, crash), and those stopped with it.",
            registry=self.registry)

    def observe(self, record) -> None:
        """A :class:`volumesvc.serving.requestlog.Record` into the latency histogram."""
        self.request_duration.labels(
            route=record.route, method=record.method, status=str(record.status),
            microversion=record.microversion).observe(record.seconds)

    def exposition(self) -> tuple[bytes, str]:
        """(body, content type) of a scrape: all workers' values in multiprocess mode."""
        import prometheus_client as prom
        from prometheus_client import multiprocess

        registry = self.registry
        if self.multiprocess_dir:
            registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)
        return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST


def in_flight(app, pool):
    """Context manager counting one request of ``pool`` in flight (no-op without metrics)."""
    metrics = getattr(app, "metrics", None)
    if metrics is None:
        return contextlib.nullcontext()
    return metrics.in_flight.labels(pool=pool).track_inprogress()


def wrap(application, metrics: "Metrics | None", conf, enforcer):
    if metrics is None:
        return application
    return MetricsApp(application, metrics, conf, enforcer)


class MetricsApp:
    """Answer ``GET [metrics] path`` to whom the policy lets; send everything else on.

    The scrape is outside the Compute API (no microversion, no fault body),
    but not outside the policy: ``volumesvc:metrics:show`` decides, for a
    tokenless scraper as an anonymous caller and for one with a token as
    the API reads any token (``auth.wrap``).
    """

    def __init__(self, application, metrics: Metrics, conf, enforcer):
        self.application, self.metrics, self.enforcer = application, metrics, enforcer
        self._with_caller = auth.wrap(self._authorized, conf, enforcer)

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "") != self.metrics.path:
            return self.application(environ, start_response)
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD"),
                                                      ("Content-Length", "0")])
            return [b""]
        if environ.get("HTTP_X_AUTH_TOKEN"):
            return self._with_caller(environ, start_response)
        return self._authorized(environ, start_response)

    def _authorized(self, environ, start_response):
        ctx = environ.get(auth.ENV_CONTEXT)
        if not self.enforcer.authorize(metrics_policy.SHOW, {}, ctx if ctx is not None else {},
                                       do_raise=False):
            status = "403 Forbidden" if ctx is not None else "401 Unauthorized"
            start_response(status, [("Content-Length", "0")])
            return [b""]
        body, content_type = self.metrics.exposition()
        start_response("200 OK", [("Content-Type", content_type),
                                  ("Content-Length", str(len(body)))])
        return [b"" if environ["REQUEST_METHOD"] == "HEAD" else body]
