"""A compute host's view: up by servicegroup's rule, version, capabilities, status; its cache."""

import datetime
import types

import pytest

from volumesvc.objects import compute_host

CONF = types.SimpleNamespace(service_down_time=10)
NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)


def _service(seconds_ago=0.0, *, host="h", forced_down=False, disabled=False, version=1,
             capabilities=None, zone=None, last_seen_up=True, updated_at=None):
    seen = NOW - datetime.timedelta(seconds=seconds_ago)
    return types.SimpleNamespace(
        host=host, forced_down=forced_down, disabled=disabled, version=version,
        capabilities=capabilities, availability_zone=zone,
        last_seen_up=seen if last_seen_up else None, updated_at=updated_at,
        created_at=NOW - datetime.timedelta(days=1))


def _view(*args, **kwargs):
    return compute_host.ComputeHost.from_service(CONF, _service(*args, **kwargs), now=NOW)


@pytest.mark.parametrize(("seconds_ago", "up"), [(0, True), (10, True), (10.5, False),
                                                 (600, False), (-5, True), (-11, False)])
def test_up_is_servicegroups_rule(seconds_ago, up):
    assert _view(seconds_ago).up is up


def test_forced_down_is_down_whatever_the_heartbeat():
    view = _view(0, forced_down=True)
    assert (view.up, view.forced_down, view.host_status) == (False, True, "DOWN")


def test_version_disabled_and_zone_come_from_the_record():
    view = _view(version=7, disabled=True, zone="az1")
    assert (view.host, view.registered, view.version, view.disabled,
            view.availability_zone) == ("h", True, 7, True, "az1")
    assert _view(version=None).version == 0
    assert _view().availability_zone == "nova"


def test_capabilities_say_yes_no_or_nothing_and_cannot_be_changed():
    view = _view(capabilities={"supports_multiattach": True,
                               "supports_tagged_attach_volume": False})
    assert view.supports("supports_multiattach") is True
    assert view.supports("supports_tagged_attach_volume") is False
    assert view.supports("supports_extend_volume") is None
    with pytest.raises(TypeError):
        view.capabilities["supports_extend_volume"] = True  # type: ignore[index]
    assert _view(capabilities=None).capabilities == {}


def test_a_missing_record_is_an_unregistered_host_that_is_down():
    view = compute_host.ComputeHost(host="gone")
    assert (view.registered, view.up, view.version, view.disabled) == (False, False, 0, False)
    assert view.supports("supports_multiattach") is None
    assert view.host_status == "UNKNOWN"


@pytest.mark.parametrize(("kwargs", "status"), [
    ({}, "UP"), ({"disabled": True}, "MAINTENANCE"), ({"seconds_ago": 60}, "DOWN"),
    ({"seconds_ago": 60, "disabled": True}, "DOWN"),
    ({"last_seen_up": False}, "UNKNOWN"),
    ({"last_seen_up": False, "updated_at": NOW}, "UP"),
])
def test_host_status(kwargs, status):
    assert _view(**kwargs).host_status == status


def _up_view(seconds_ago=0.0, host="h"):
    now = compute_host.servicegroup.utcnow()
    return compute_host.ComputeHost(host=host, registered=True, up=True, reported=True,
                                    last_heartbeat=now - datetime.timedelta(seconds=seconds_ago))


def test_cache_keeps_an_up_view_for_the_ttl_only():
    clock = [100.0]
    cache = compute_host.UpCache(CONF, ttl=1.0, clock=lambda: clock[0])
    view = _up_view()
    cache.remember(view)
    clock[0] += 0.9
    assert cache.recall("h") is view
    clock[0] += 0.2
    assert cache.recall("h") is None


def test_cache_never_keeps_down_or_unknown_and_forgets_a_host_found_down():
    clock = [100.0]
    cache = compute_host.UpCache(CONF, ttl=1.0, clock=lambda: clock[0])
    cache.remember(compute_host.ComputeHost(host="h"))
    assert cache.recall("h") is None
    cache.remember(_up_view())
    cache.remember(compute_host.ComputeHost(host="h", registered=True))
    assert cache.recall("h") is None


def test_cache_does_not_keep_an_up_view_past_its_heartbeat_deadline():
    """A heartbeat 9.5 s old (down after 10 s) is trusted for about half a second only."""
    clock = [100.0]
    cache = compute_host.UpCache(CONF, ttl=1.0, clock=lambda: clock[0])
    cache.remember(_up_view(9.5))
    clock[0] += 0.4
    assert cache.recall("h") is not None
    clock[0] += 0.2
    assert cache.recall("h") is None


def test_cache_keeps_hosts_apart():
    cache = compute_host.UpCache(CONF, ttl=1.0, clock=lambda: 100.0)
    cache.remember(_up_view(host="a"))
    assert cache.recall("a") is not None and cache.recall("b") is None
