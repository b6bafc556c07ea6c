"""gunicorn workers whose own refusals are Nova fault bodies, not HTML.

gunicorn answers some requests before any application code runs: a request
line over ``limit_request_line`` (414), too many or too large header fields
(431), a malformed request line or header (400). Its worker writes those as
a small HTML page through ``handle_error``, and gunicorn has no setting for
the body. These workers let gunicorn decide the status and message as
always, catch what it writes, and send the same status as JSON in Nova's
fault shape instead, so every client sees one error format.

Use them with ``--worker-class volumesvc.serving.gunicorn_workers.ThreadWorker``
(or ``SyncWorker``); ``volumesvc-api`` does (``server.serve``).

The thread worker also keeps reads from queueing behind writes: see
:class:`ThreadWorker`.
"""

import html
import json
import os
import random
import re
import selectors
import socket
import threading
import time
import typing
from concurrent import futures
from functools import partial

from gunicorn import util
from gunicorn.workers import gthread, sync

from volumesvc.api import errors
from volumesvc.serving import metrics

_STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3}) ([^\r\n]*)\r\n")
# The message gunicorn puts after its heading (see gunicorn.util.write_error).
_MESSAGE = re.compile(r"</h1>\s*(.*?)\s*</body>", re.S)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# The mixins below only ever come before one of gunicorn's worker classes:
# type-check them as workers, but keep gunicorn out of their runtime bases,
# so that their super() calls reach whatever class they are mixed into.
if typing.TYPE_CHECKING:
    from gunicorn.workers.base import Worker as _Worker
    from gunicorn.workers.gthread import ThreadWorker as _GthreadWorker
else:
    _Worker = _GthreadWorker = object


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


class _JSONFaults(_Worker):
    def handle_error(self, req, client, addr, exc):
        capture = _Capture(client)
        super().handle_error(req, capture, addr, exc)
        if not capture.data:
            return
        try:
            util.write_nonblock(client, fault_response(capture.data) or capture.data)
        except Exception:  # noqa: BLE001 - the client may be gone; gunicorn ignores it too
            self.log.debug("Failed to send error message.")


MEMORY_CHECK_INTERVAL = 5.0
# Seconds without a request before a worker over its memory bound is
# replaced: the burst is over, not merely between two of its requests.
MEMORY_QUIET_SECONDS = 10.0


def private_memory_mib(path="/proc/self/smaps_rollup") -> float | None:
    """This process's private (not shared) resident memory in MiB; None where unknown."""
    total_kib = 0
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total_kib += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return total_kib / 1024.0


class _MemoryBound(_GthreadWorker):
    """Retire the worker, gracefully, once its private memory passes a bound.

    gunicorn's worker loop calls ``notify()`` about once a second; every
    ``MEMORY_CHECK_INTERVAL`` seconds (offset at random per worker, so the
    workers of one master are not replaced together) that reads the
    process's private memory. Above ``worker_private_memory_max`` MiB, once
    the burst is over — no request for ``memory_quiet_seconds`` (up to half
    as long again, at random per worker) and none being served — the worker
    stops its loop as it does after ``max_requests`` and the master forks a
    fresh worker.

    Why wait for quiet: a worker in steady use holds 30-40 MiB of its own
    (pages of the preloaded app it touched, connections, caches), so a
    bound that a burst's leftovers pass is passed in ordinary use too. With
    only "nothing in flight right now", workers were replaced every few
    seconds in the middle of an attach storm and of the integration tests.
    A busy worker is left alone (``max_requests`` still recycles it); a
    worker that went quiet gives its memory back. A worker retired while
    serving would also have to finish slow requests within gunicorn's
    graceful timeout.
    """

    worker_private_memory_max = 0
    memory_quiet_seconds = MEMORY_QUIET_SECONDS
    alive: bool
    nr: int

    def notify(self):
        super().notify()
        bound = self.worker_private_memory_max
        if not bound or not self.alive:
            return
        now = time.monotonic()
        next_check = getattr(self, "_next_memory_check", None)
        if next_check is None:
            self._next_memory_check = now + random.uniform(0, MEMORY_CHECK_INTERVAL)
            # NOTE: the quiet time differs per worker, so that the workers of
            # one master, all idle from the same moment, are not replaced in
            # the same second.
            self._quiet_needed = self.memory_quiet_seconds * random.uniform(1.0, 1.5)
            self._last_nr, self._last_request_seen = self.nr, now
            return
        if self.nr != self._last_nr:  # served requests since the last heartbeat
            self._last_nr, self._last_request_seen = self.nr, now
        if now < next_check:
            return
        # NOTE: a check that finds the worker busy is retried at the next
        # heartbeat (about a second), not a whole interval later.
        if (now - self._last_request_seen < self._quiet_needed
                or self._requests_in_flight()):
            return
        self._next_memory_check = now + MEMORY_CHECK_INTERVAL
        private = private_memory_mib()
        if private is not None and private > bound:
            self.log.info(
                "Worker %s holds %.0f MiB of its own, over [wsgi] "
                "worker_private_memory_max %d: replacing it", os.getpid(), private, bound)
            self.alive = False

    def _requests_in_flight(self) -> int:
        """Requests being served now (in threads); idle kept-alive connections are not."""
        open_conns = self.nr_conns
        waiting = len(self.keepalived_conns) + len(self.pending_conns)
        return max(0, open_conns - waiting)


class SyncWorker(_JSONFaults, sync.SyncWorker):
    """gunicorn's sync worker with JSON fault bodies for its own refusals."""


READ, WRITE = "read", "write"
_READ_METHODS = (b"GET ", b"HEAD ")
_PEEK = 5


def request_kind(sock) -> str | None:
    """READ or WRITE from the first bytes the client sent; None if none arrived yet.

    Looks without consuming (``MSG_PEEK``), so gunicorn's parser still reads
    the whole request. Anything it cannot tell (TLS, a closed or failing
    socket) is a WRITE: the ordinary pool, exactly as without this worker.
    """
    try:
        head = sock.recv(_PEEK, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return None
    except (OSError, ValueError):  # ValueError: an SSL socket refuses recv flags
        return WRITE
    if head.startswith(_READ_METHODS):
        return READ
    if len(head) < _PEEK and head and any(m.startswith(head) for m in _READ_METHODS):
        return None  # "GE" so far: wait for the rest of the method
    return WRITE


class ThreadWorker(_MemoryBound, _JSONFaults, gthread.ThreadWorker):
    """gunicorn's gthread worker with JSON faults, whose reads never wait behind writes.

    gthread hands every accepted request to one thread pool, first come
    first served. In an attach storm every thread ends up waiting on Cinder
    (each attach's synchronous volume GET, behind the conductor's
    attachment calls in Cinder's queue), and a ``GET /servers/{id}`` that
    arrives then waits for the attaches queued before it: 20 s p99 at 300
    concurrent attaches (benchmarks/README.md). Here GET and HEAD requests
    go to a small pool of their own (``read_threads``), so they wait only
    for other reads; everything else keeps ``threads``. The method is read
    with ``MSG_PEEK`` before the request is queued; a connection that has
    sent nothing yet waits on the worker's poller, not in a thread.
    """

    # What a gunicorn command line naming this class gets (without gunicorn_conf):
    # the defaults of [wsgi] read_threads and worker_private_memory_max.
    read_threads = 8
    worker_private_memory_max = 32

    def init_process(self):
        self.read_pool = (futures.ThreadPoolExecutor(
            max_workers=self.read_threads, thread_name_prefix="read")
            if self.read_threads > 0 else None)
        super().init_process()

    def enqueue_req(self, conn):
        if self.read_pool is None:
            return super().enqueue_req(conn)
        kind = request_kind(conn.sock)
        if kind is None and not conn.initialized and not conn.data_ready:
            self._wait_for_request(conn)
            return None
        pool = self.read_pool if kind == READ else self.tpool
        fs = pool.submit(self.handle, conn)
        fs.add_done_callback(
            lambda fut: self.method_queue.defer(self.finish_request, conn, fut))
        return None

    def handle(self, conn):
        # NOTE: the pool is told by the running thread's name (the read pool's
        # threads are named "read_..."), which works for both enqueue paths.
        pool = READ if threading.current_thread().name.startswith("read") else WRITE
        with metrics.in_flight(getattr(self, "wsgi", None), pool):
            return super().handle(conn)

    def _wait_for_request(self, conn):
        """Park a new connection on the poller until its request line arrives.

        The same path gthread takes for a connection that sent nothing in
        time; ``on_pending_socket_readable`` queues it again once readable.
        """
        conn.sock.setblocking(False)
        conn.timeout = time.monotonic() + self.cfg.keepalive
        self.pending_conns.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ,
                             partial(self.on_pending_socket_readable, conn))

    def handle_quit(self, sig, frame):
        if self.read_pool is not None:
            self.read_pool.shutdown(wait=False)
        super().handle_quit(sig, frame)

    def run(self):
        try:
            super().run()
        finally:
            if self.read_pool is not None:
                self.read_pool.shutdown(wait=False)


def thread_worker(read_threads: int, private_memory_max: int = 0,
                  quiet_seconds: float = MEMORY_QUIET_SECONDS) -> type:
    """The :class:`ThreadWorker` with ``read_threads`` for reads and a memory bound (MiB).

    0 read threads: one pool for everything; 0 MiB: no memory bound.
    ``quiet_seconds``: how long without a request before the bound applies.
    """
    return type("ThreadWorker", (ThreadWorker,), {
        "read_threads": read_threads, "worker_private_memory_max": private_memory_max,
        "memory_quiet_seconds": quiet_seconds, "__module__": __name__})
