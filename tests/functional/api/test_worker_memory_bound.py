"""A worker that holds more private memory than ``worker_private_memory_max`` is replaced.

Real gunicorn, volumesvc's thread worker, one worker process. Each POST
leaves the worker 8 MiB heavier; with a bound the worker is replaced by a
fresh one (another pid) within a few checks, and no request fails; without
a bound (the control case) the same worker keeps serving.
"""

import time

import pytest

from tests.fixtures.gunicorn import request

APP = "tests.fixtures.growing_app:app"


@pytest.mark.parametrize("bound,replaced", [(40, True), (0, False)])
def test_worker_over_its_memory_bound_is_replaced(gunicorn, bound, replaced):
    port = gunicorn(f"thread_worker(2, {bound})", APP)
    first = request(port, "GET", 10)[1]
    statuses = [request(port, "POST", 10)[0] for _ in range(6)]  # ~48 MiB more
    assert statuses == [200] * 6
    seen = {first}
    deadline = time.monotonic() + 15  # checks run every 5 s, first one offset at random
    while time.monotonic() < deadline:
        status, pid = request(port, "GET", 10)  # every request is answered meanwhile
        assert status == 200
        seen.add(pid)
        if replaced and pid != first:
            break
        time.sleep(0.2)
    assert (len(seen) > 1) is replaced
