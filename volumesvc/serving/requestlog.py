"""One INFO line per API request, as Nova's ``nova.api.openstack.requestlog``.

The line (doc/source/admin/monitoring.rst)::

    127.0.0.1 "POST /v2.1/servers/X/os-volume_attachments" status: 202 len: 312
    microversion: 2.101 time: 0.041237 request_id: req-... project: P

It is written once the application has built its response (every body of
this API is built whole), by the WSGI middleware around everything but
``/healthcheck``, so refusals (401, 404, 406...) get their line too. What
Flask knows and the middleware does not (the URL rule that matched, the
negotiated microversion) is left in the WSGI environ by ``api/app.py``
(``ENV_ROUTE``, ``ENV_MICROVERSION``); observers (the metrics) get the same
:class:`Record`.
"""

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

from volumesvc import logsafe
from volumesvc.api import app as api_app
from volumesvc.api import auth

LOG = logging.getLogger(__name__)

# The route label of a request that matched no URL rule (404, 300 choices).
UNMATCHED = "unmatched"


@dataclasses.dataclass(frozen=True)
class Record:
    """What one request was and how it went."""

    method: str
    path: str
    route: str
    status: int
    microversion: str
    seconds: float
    length: str
    request_id: str
    project: str
    remote: str


def _record(environ, status_line: str, headers, seconds: float) -> Record:
    query = environ.get("QUERY_STRING", "")
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    ctx = environ.get(auth.ENV_CONTEXT)
    length = next((v for k, v in headers if k.lower() == "content-length"), "-")
    return Record(
        method=environ.get("REQUEST_METHOD", "-"),
        path=path + ("?" + query if query else ""),
        route=environ.get(api_app.ENV_ROUTE, UNMATCHED),
        status=int(status_line.split(" ", 1)[0]) if status_line else 500,
        microversion=environ.get(api_app.ENV_MICROVERSION, "-"),
        seconds=seconds,
        length=length,
        request_id=environ.get("openstack.request_id") or "-",
        project=(ctx.project_id if ctx is not None else None) or "-",
        remote=environ.get("REMOTE_ADDR") or "-")


def log(record: Record) -> None:
    # NOTE: method and path are the client's: escaped so that a %0a in the
    # path cannot start a line of its own.
    LOG.info('%s "%s %s" status: %d len: %s microversion: %s time: %.6f '
             'request_id: %s project: %s',
             record.remote, logsafe.escape(record.method), logsafe.escape(record.path),
             record.status, record.length, record.microversion, record.seconds,
             record.request_id, logsafe.escape(record.project))


def observers(metrics) -> tuple[Callable[[Record], None], ...]:
    """The log line, and the latency histogram when ``metrics`` is not None."""
    return (log,) if metrics is None else (log, metrics.observe)


class RequestLog:
    """Time each request and hand its :class:`Record` to every observer."""

    def __init__(self, application, observers: Sequence[Callable[[Record], None]] = (log,)):
        self.application = application
        self.observers = tuple(observers)

    def __call__(self, environ, start_response):
        started = time.monotonic()
        seen: dict = {}

        def _start_response(status, headers, exc_info=None):
            seen["status"], seen["headers"] = status, headers
            return start_response(status, headers, exc_info)

        try:
            return self.application(environ, _start_response)
        finally:
            record = _record(environ, seen.get("status", ""), seen.get("headers", ()),
                             time.monotonic() - started)
            for observer in self.observers:
                observer(record)
