"""gunicorn workers whose own refusals are Nova fault bodies, not HTML.

gunicorn answers some requests before any application code runs: a request
line over ``limit_request_line`` (414), too many or too large header fields
(431), a malformed request line or header (400). Its worker writes those as
a small HTML page through ``handle_error``, and gunicorn has no setting for
the body. These workers let gunicorn decide the status and message as
always, catch what it writes, and send the same status as JSON in Nova's
fault shape instead, so every client sees one error format.

Use them with ``--worker-class volumesvc.api.gunicorn_workers.ThreadWorker``
(or ``SyncWorker``); ``volumesvc-api`` does (``wsgi.serve``).
"""

import html
import json
import re

from gunicorn import util
from gunicorn.workers import gthread, sync

from volumesvc.api import errors

_STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3}) ([^\r\n]*)\r\n")
# The message gunicorn puts after its heading (see gunicorn.util.write_error).
_MESSAGE = re.compile(r"</h1>\s*(.*?)\s*</body>", re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _Capture:
    """Stands in for the client socket while gunicorn writes its error page."""

    def __init__(self, sock):
        self._sock = sock
        self.data = b""

    def sendall(self, data):
        self.data += data

    def gettimeout(self):
        return 0.0

    def setblocking(self, flag):
        pass

    def __getattr__(self, name):
        return getattr(self._sock, name)


def fault_response(page: bytes) -> bytes | None:
    """gunicorn's raw HTML error response as a JSON fault response (None if unrecognised)."""
    match = _STATUS_LINE.match(page)
    if match is None:
        return None
    status = int(match.group(1))
    reason = match.group(2).decode("latin-1")
    _, _, body = page.partition(b"\r\n\r\n")
    found = _MESSAGE.search(body.decode("latin-1"))
    detail = html.unescape(found.group(1)) if found else ""
    message = _CONTROL.sub("?", f"{reason}: {detail}" if detail else reason)
    payload = json.dumps(errors.fault_body(status, message)).encode()
    code = errors.APIError(status, message).code
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\n{errors.ERROR_CODE_HEADER}: {code}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n")
    return head.encode("latin-1") + payload


class _JSONFaults:
    def handle_error(self, req, client, addr, exc):
        capture = _Capture(client)
        super().handle_error(req, capture, addr, exc)  # type: ignore[misc]
        if not capture.data:
            return
        try:
            util.write_nonblock(client, fault_response(capture.data) or capture.data)
        except Exception:  # noqa: BLE001 - the client may be gone; gunicorn ignores it too
            self.log.debug("Failed to send error message.")  # type: ignore[attr-defined]


class SyncWorker(_JSONFaults, sync.SyncWorker):
    """gunicorn's sync worker with JSON fault bodies for its own refusals."""


class ThreadWorker(_JSONFaults, gthread.ThreadWorker):
    """gunicorn's gthread worker with JSON fault bodies for its own refusals."""
