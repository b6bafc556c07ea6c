"""api/volume_types.py: how often an API worker asks Cinder for its volume types."""

import types

from volumesvc.api.volume_types import VolumeTypes


class _Cinder:
    def __init__(self, names):
        self.names = names
        self.reads = 0

    def get_volume_types(self, context):
        self.reads += 1
        return [{"id": f"id-{n}", "name": n} for n in self.names]


def _conf(ttl):
    return types.SimpleNamespace(cinder=types.SimpleNamespace(volume_type_cache_seconds=ttl))


def _ctx(project="p1", admin=False):
    return types.SimpleNamespace(project_id=project, is_admin=admin)


def test_a_known_type_is_served_from_the_list_until_it_is_old():
    now = [100.0]
    cinder = _Cinder(["gold"])
    cache = VolumeTypes(_conf(10), cinder, clock=lambda: now[0])
    for wanted in ("gold", "id-gold", "gold"):
        assert [t["name"] for t in cache.visible(_ctx(), wanted)] == ["gold"]
    assert cinder.reads == 1
    now[0] += 10.5
    cache.visible(_ctx(), "gold")
    assert cinder.reads == 2


def test_a_type_missing_from_the_list_is_looked_up_again():
    cinder = _Cinder(["gold"])
    cache = VolumeTypes(_conf(10), cinder, clock=lambda: 0.0)
    cache.visible(_ctx(), "gold")
    cinder.names.append("silver")
    assert "silver" in [t["name"] for t in cache.visible(_ctx(), "silver")]
    assert cinder.reads == 2


def test_lists_are_kept_per_project_and_admin():
    cinder = _Cinder(["gold"])
    cache = VolumeTypes(_conf(10), cinder, clock=lambda: 0.0)
    cache.visible(_ctx("p1"), "gold")
    cache.visible(_ctx("p2"), "gold")
    cache.visible(_ctx("p1", admin=True), "gold")
    cache.visible(_ctx("p1"), "gold")
    assert cinder.reads == 3


def test_zero_seconds_asks_cinder_every_time():
    cinder = _Cinder(["gold"])
    cache = VolumeTypes(_conf(0), cinder, clock=lambda: 0.0)
    cache.visible(_ctx(), "gold")
    cache.visible(_ctx(), "gold")
    assert cinder.reads == 2


def test_requests_missing_together_share_one_read():
    """Regression (issue 15): 50 typed boots arriving at once all missed the
    expired list and all asked cinder-api (still 50 type reads per storm)."""
    import threading

    release = threading.Event()

    class _Slow(_Cinder):
        def get_volume_types(self, context):
            release.wait(5)
            return super().get_volume_types(context)

    cinder = _Slow(["gold"])
    cache = VolumeTypes(_conf(10), cinder)
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.visible(_ctx(), "gold")))
               for _ in range(8)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(10)
    assert len(got) == 8 and cinder.reads == 1
