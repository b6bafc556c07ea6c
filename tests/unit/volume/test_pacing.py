"""Back-pressure on Cinder calls: the bound, how it follows latency, the adapter's use of it."""

import threading
import time
from unittest import mock

import prometheus_client as prom
import pytest
from cinderclient import exceptions as cinder_exception
from keystoneauth1 import exceptions as ks_exception

from volumesvc import exception
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.volume import cinder, pacing


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _calls(p, clock, seconds, n, error=None):
    """``n`` calls one after another, each taking ``seconds`` on ``clock``."""
    for _ in range(n):
        try:
            with p.slot("test"):
                clock.now += seconds
                if error is not None:
                    raise error
        except Exception as exc:  # noqa: BLE001 - the error the call was given
            assert exc is error


def test_fast_answers_open_the_bound_up_to_the_maximum():
    clock = Clock()
    p = pacing.Pacing(maximum=16, wait_timeout=10, clock=clock)
    assert p.limit == 4
    _calls(p, clock, 0.2, 40)
    assert p.limit == 16


def test_slower_answers_close_the_bound_and_faster_ones_open_it_again():
    clock = Clock()
    p = pacing.Pacing(maximum=32, wait_timeout=10, clock=clock)
    _calls(p, clock, 0.2, 60)
    assert p.limit == 32
    # Cinder's queue grows: each answer takes 20 times the unloaded time.
    _calls(p, clock, 4.0, 60)
    slow = p.limit
    assert slow < 12
    _calls(p, clock, 0.2, 60)
    assert p.limit > 2 * slow


def test_an_overloaded_answer_halves_the_bound_and_a_4xx_does_not():
    clock = Clock()
    p = pacing.Pacing(maximum=16, wait_timeout=10, clock=clock, overloaded=cinder.overloaded)
    _calls(p, clock, 0.2, 40)
    _calls(p, clock, 0.2, 1, error=cinder_exception.ClientException(500, "timeout"))
    assert p.limit == 8
    _calls(p, clock, 0.2, 1, error=ks_exception.ConnectFailure("refused"))
    assert p.limit == 4
    before = p.limit
    _calls(p, clock, 0.2, 1, error=cinder_exception.BadRequest(400, "bad"))
    assert p.limit >= before


def test_never_more_calls_in_flight_than_the_bound():
    p = pacing.Pacing(maximum=3, wait_timeout=30)
    p.limit = 3.0
    seen, lock, release = [], threading.Lock(), threading.Event()
    running = [0]

    def call():
        with p.slot("test"):
            with lock:
                running[0] += 1
                seen.append(running[0])
            release.wait(5)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=call) for _ in range(10)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while p.waiting < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (p.in_flight, p.waiting) == (3, 7)
    release.set()
    for t in threads:
        t.join(10)
    assert max(seen) == 3 and len(seen) == 10
    assert (p.in_flight, p.waiting) == (0, 0)


def test_a_call_that_waits_too_long_fails_as_a_cinder_connection_failure():
    p = pacing.Pacing(maximum=1, wait_timeout=0.2)
    p.limit = 1.0
    inside, release = threading.Event(), threading.Event()

    def hold():
        with p.slot("holder"):
            inside.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait(5)
    with pytest.raises(exception.CinderConnectionFailed, match="pacing_wait_timeout"):
        with p.slot("attachment update"):
            pass
    release.set()
    holder.join(5)
    assert p.waits_timed_out == 1 and p.waiting == 0


def test_maximum_zero_sends_every_call_at_once():
    p = pacing.Pacing(maximum=0, wait_timeout=1)
    with p.slot("a"), p.slot("b"), p.slot("c"):
        assert p.in_flight == 0


def test_gauges_read_the_live_values():
    registry = prom.CollectorRegistry()
    p = pacing.Pacing(maximum=8, wait_timeout=1)
    p.register_metrics(registry)
    with p.slot("a"):
        assert registry.get_sample_value("volumesvc_cinder_pacing_in_flight") == 1
    assert registry.get_sample_value("volumesvc_cinder_pacing_limit") == p.limit
    assert registry.get_sample_value("volumesvc_cinder_pacing_waiting") == 0


@pytest.fixture
def api():
    conf = get_conf()
    conf.set_override("auth_strategy", "noauth", "cinder")
    conf.set_override("endpoint_override", "http://127.0.0.1:8776/v3", "cinder")
    conf.set_override("max_concurrent_calls", 2, "cinder")
    conf.set_override("pacing_wait_timeout", 1, "cinder")
    return cinder.CinderAPI(conf)


def test_the_adapter_paces_attachment_calls_and_learns_from_cinders_5xx(api):
    ctx = RequestContext(user_id="alice", project_id="6f0c3b1e2a4d4c5b9e8f7a6b5c4d3e2f")
    client = mock.MagicMock()
    seen = []
    client.attachments.update.side_effect = lambda *a, **k: (
        seen.append(api.pacing.in_flight), {"id": "a", "connection_info": {"x": 1}})[1]
    client.attachments.complete.side_effect = cinder_exception.ClientException(
        504, "Gateway Timeout")
    with mock.patch.object(api, "client", return_value=client):
        assert api.attachment_update(ctx, "a", {"host": "h"})["data"] == {"x": 1}
        assert seen == [1] and api.pacing.in_flight == 0
        limit = api.pacing.limit
        with pytest.raises(exception.CinderAPIError):
            api.attachment_complete(ctx, "a")
    assert api.pacing.limit == max(api.pacing.minimum, limit / 2)
