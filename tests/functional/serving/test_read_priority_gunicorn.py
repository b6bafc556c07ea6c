"""Reads are answered while every request thread waits on a stalled backend.

A real gunicorn runs volumesvc's thread worker (1 process, 2 threads) on an
app whose writes hang until released. Six writes take both threads and
queue four more; a GET sent then is answered at once with ``read_threads``
and waits behind the writes without (the control case, so the check can
fail). The writes all complete once released.
"""

import concurrent.futures
import time

import pytest

from tests.fixtures.gunicorn import request

APP = "tests.fixtures.held_writes_app:app"


@pytest.mark.parametrize("read_threads,answered", [(2, True), (0, False)])
def test_get_while_all_threads_hold_writes(gunicorn, tmp_path, read_threads, answered):
    release = tmp_path / "release"
    port = gunicorn(f"thread_worker({read_threads})", APP,
                    env={"HELD_WRITES_RELEASE": str(release)})
    try:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            writes = [pool.submit(request, port, "POST", 30) for _ in range(6)]
            time.sleep(1.0)  # both threads hold a write, four more wait
            assert not any(w.done() for w in writes)
            t0 = time.monotonic()
            try:
                got = request(port, "GET", 3)
            except TimeoutError:
                got = None
            waited = time.monotonic() - t0
            if answered:
                assert got == (200, b"GET")
                assert waited < 2.0
            else:
                assert got is None  # queued behind the held writes
            assert not any(w.done() for w in writes)  # the writes were still held meanwhile
            release.touch()
            assert [w.result(30) for w in writes] == [(200, b"POST")] * 6
    finally:
        release.touch()  # never leave the server's writes hanging on a failure
