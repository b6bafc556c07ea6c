"""servicegroup.UpCache: an attach storm reads a compute's service row about once a second."""

import datetime
import types

from volumesvc import servicegroup


def _service(seconds_ago, forced_down=False):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return types.SimpleNamespace(last_seen_up=now - datetime.timedelta(seconds=seconds_ago),
                                 updated_at=None, created_at=None, forced_down=forced_down)


class _Reads:
    def __init__(self, service):
        self.service, self.count = service, 0

    def __call__(self):
        self.count += 1
        return self.service


def _cache(clock):
    conf = types.SimpleNamespace(service_down_time=10)
    return servicegroup.UpCache(conf, ttl=1.0, clock=lambda: clock[0])


def test_up_is_reused_for_the_ttl_then_read_again():
    clock = [100.0]
    cache, read = _cache(clock), _Reads(_service(0))
    assert all(cache.is_up("h", read) for _ in range(20))
    assert read.count == 1
    clock[0] += 1.5
    read.service = _service(0, forced_down=True)
    assert cache.is_up("h", read) is False and read.count == 2


def test_down_or_unknown_is_never_remembered():
    clock = [100.0]
    cache, read = _cache(clock), _Reads(None)
    assert not cache.is_up("h", read) and not cache.is_up("h", read)
    read.service = _service(60)
    assert not cache.is_up("h", read)
    assert read.count == 3
    read.service = _service(0)
    assert cache.is_up("h", read) and read.count == 4


def test_up_is_not_reused_past_the_heartbeat_deadline():
    """A heartbeat 9.5 s old (down after 10 s) is trusted for half a second only."""
    clock = [100.0]
    cache, read = _cache(clock), _Reads(_service(9.5))
    assert cache.is_up("h", read)
    clock[0] += 0.6
    read.service = _service(10.5)
    assert not cache.is_up("h", read) and read.count == 2


def test_hosts_are_separate():
    clock = [100.0]
    cache = _cache(clock)
    assert cache.is_up("a", _Reads(_service(0)))
    other = _Reads(None)
    assert not cache.is_up("b", other) and other.count == 1
