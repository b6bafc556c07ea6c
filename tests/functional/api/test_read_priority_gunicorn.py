"""Reads are answered while every request thread waits on a stalled backend.

A real gunicorn runs volumesvc's thread worker (1 process, 2 threads) on an
app whose writes hang until released. Six writes take both threads and
queue four more; a GET sent then is answered at once with ``read_threads``
and waits behind the writes without (the control case, so the check can
fail). The writes all complete once released.
"""

import concurrent.futures
import http.client
import os
import subprocess
import sys
import time

import pytest

from volumesvc.aio import free_port, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _request(port, method, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, "/")
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _up(port):
    try:
        return _request(port, "GET", 2)[0] == 200
    except OSError:
        return False


@pytest.fixture
def server(tmp_path):
    procs = []

    def start(read_threads):
        port = free_port()
        release = tmp_path / f"release-{read_threads}"
        config = tmp_path / f"gunicorn-{read_threads}.py"
        config.write_text(
            "from volumesvc.api.gunicorn_workers import thread_worker\n"
            f"worker_class = thread_worker({read_threads})\n"
            f"bind = '127.0.0.1:{port}'\nworkers = 1\nthreads = 2\n"
            "control_socket_disable = True\n")
        env = dict(os.environ, HELD_WRITES_RELEASE=str(release),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(config),
             "tests.fixtures.held_writes_app:app"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append((proc, release))
        wait_for(lambda: _up(port), 30, what="gunicorn")
        return port, release

    yield start
    for proc, release in procs:
        release.touch()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.parametrize("read_threads,answered", [(2, True), (0, False)])
def test_get_while_all_threads_hold_writes(server, read_threads, answered):
    port, release = server(read_threads)
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        writes = [pool.submit(_request, port, "POST", 30) for _ in range(6)]
        time.sleep(1.0)  # both threads hold a write, four more wait
        assert not any(w.done() for w in writes)
        t0 = time.monotonic()
        try:
            got = _request(port, "GET", 3)
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
