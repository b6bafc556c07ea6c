"""A worker that holds more private memory than ``worker_private_memory_max`` is replaced.

Real gunicorn, volumesvc's thread worker, one worker process. Each POST
leaves the worker 8 MiB heavier; with a bound the worker is replaced by a
fresh one (another pid) within a few checks, and no request fails; without
a bound (the control case) the same worker keeps serving.
"""

import http.client
import os
import subprocess
import sys
import time

import pytest

from volumesvc.aio import free_port, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _request(port, method):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, "/")
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _pid(port):
    try:
        status, body = _request(port, "GET")
    except OSError:
        return None
    return body if status == 200 else None


@pytest.fixture
def gunicorn(tmp_path):
    procs = []

    def start(bound):
        port = free_port()
        config = tmp_path / f"gunicorn-{bound}.py"
        config.write_text(
            "from volumesvc.api.gunicorn_workers import thread_worker\n"
            f"worker_class = thread_worker(2, {bound})\n"
            f"bind = '127.0.0.1:{port}'\nworkers = 1\nthreads = 2\n"
            "control_socket_disable = True\n")
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(config),
             "tests.fixtures.growing_app:app"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        wait_for(lambda: _pid(port), 30, what="gunicorn")
        return port

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.parametrize("bound,replaced", [(40, True), (0, False)])
def test_worker_over_its_memory_bound_is_replaced(gunicorn, bound, replaced):
    port = gunicorn(bound)
    first = _pid(port)
    statuses = [_request(port, "POST")[0] for _ in range(6)]  # ~48 MiB more
    assert statuses == [200] * 6
    seen = {first}
    deadline = time.monotonic() + 15  # checks run every 5 s, first one offset at random
    while time.monotonic() < deadline:
        status, pid = _request(port, "GET")  # every request is answered meanwhile
        assert status == 200
        seen.add(pid)
        if replaced and pid != first:
            break
        time.sleep(0.2)
    assert (len(seen) > 1) is replaced
