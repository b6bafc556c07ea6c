"""A worker that holds more private memory than ``worker_private_memory_max`` is replaced.

Real gunicorn, volumesvc's thread worker, one worker process. Each POST
leaves the worker 8 MiB heavier. With a bound, the worker is kept while
requests keep coming and replaced by a fresh one (another pid) once it has
been quiet for ``quiet_seconds`` (2 here, 10 by default); no request fails.
Without a bound (the control case) the same worker keeps serving.
"""

import time

import pytest

from tests.fixtures.gunicorn import request

APP = "tests.fixtures.growing_app:app"
QUIET = 2


@pytest.mark.parametrize("bound,replaced", [(40, True), (0, False)])
def test_worker_over_its_memory_bound_is_replaced_once_quiet(gunicorn, bound, replaced):
    port = gunicorn(f"thread_worker(2, {bound}, {QUIET})", APP)
    first = request(port, "GET", 10)[1]
    statuses = [request(port, "POST", 10)[0] for _ in range(6)]  # ~48 MiB more
    assert statuses == [200] * 6
    # Busy: a request every 0.5 s for longer than a check interval (5 s) plus
    # the quiet time: the worker over its bound is kept.
    busy_until = time.monotonic() + 8
    while time.monotonic() < busy_until:
        assert request(port, "GET", 10) == (200, first)
        time.sleep(0.5)
    # Quiet: within a check interval and the quiet time it is replaced.
    time.sleep(QUIET * 1.5 + 6)
    status, pid = request(port, "GET", 10)
    assert status == 200
    assert (pid != first) is replaced
