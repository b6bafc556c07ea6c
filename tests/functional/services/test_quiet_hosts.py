"""Placement on a compute that only looks down: asked directly before "No valid host".

A compute whose heartbeats stopped arriving (a host busy starting a wave of
guests, or a conductor outage: computes heartbeat through the conductor)
is down by its record while it serves RPC. A build (and an unshelve, and a
move's destination) asks such a host before giving up on it; a host that
is gone, or that an operator forced down, still refuses the build.
"""

import time

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc import binaries
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_fault as fault_obj
from volumesvc.objects import service as service_obj

TOKEN = "u1:p1"


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=("quiet",),
                  conf_overrides={("compute", "host_probe_timeout"): 1})
    yield stack
    stack.stop()


def _boot(stack):
    _, body, _ = stack.api("POST", "/servers", {"server": {
        "name": "s", "flavorRef": "42", "block_device_mapping_v2": BLANK_ROOT}},
        token=TOKEN, status=202)
    return body["server"]["id"]


def _silence(stack, host="quiet", down_time=1):
    """``host`` stops heartbeating but keeps serving RPC, and looks down once it has."""
    stack.computes[host].conf.set_override("report_interval", 3600)
    time.sleep(1.2)  # the beat in flight lands first
    stack.conf.set_override("service_down_time", down_time)
    stack.wait(lambda: not compute_host.get(stack.conf, stack.db, stack.admin_context(),
                                            host).up, what=f"{host} looks down")


def _asked(stack, monkeypatch):
    """The hosts the conductor pings, in order."""
    compute = stack.conductor.manager._deps.compute
    real, asked = compute.ping, []

    def ping(*args, **kwargs):
        asked.append(kwargs.get("host"))
        return real(*args, **kwargs)

    monkeypatch.setattr(compute, "ping", ping)
    return asked


def _fault(stack, server_id):
    return fault_obj.latest(stack.db, stack.admin_context(), server_id).message


def test_a_build_goes_to_a_host_that_only_looks_down(stack, monkeypatch):
    asked = _asked(stack, monkeypatch)
    _silence(stack)
    server_id = _boot(stack)
    stack.wait_for_server_status(server_id, "ACTIVE")
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), server_id).host == "quiet"
    assert asked == ["quiet"]


def test_a_host_that_does_not_answer_is_still_refused(stack):
    _silence(stack)
    stack.computes["quiet"].stop()
    server_id = _boot(stack)
    stack.wait_for_server_status(server_id, "ERROR")
    fault = _fault(stack, server_id)
    assert "No valid host" in fault and "quiet: down" in fault


def test_a_host_forced_down_is_not_asked(stack, monkeypatch):
    asked = _asked(stack, monkeypatch)
    ctx = stack.admin_context()
    service = service_obj.get_by_host_and_binary(stack.db, ctx, "quiet", binaries.COMPUTE)
    service_obj.update(stack.db, ctx, service.uuid, forced_down=True)
    server_id = _boot(stack)
    stack.wait_for_server_status(server_id, "ERROR")
    assert "quiet: down" in _fault(stack, server_id)
    assert asked == []


def test_an_up_host_is_chosen_without_asking_the_quiet_one(tmp_path, monkeypatch):
    stack = Stack(tmp_path, hosts=("quiet", "busy"))
    try:
        asked = _asked(stack, monkeypatch)
        # "busy" beats every second, well within the 3 s; "quiet" stops.
        _silence(stack, "quiet", down_time=3)
        server_id = _boot(stack)
        stack.wait_for_server_status(server_id, "ACTIVE")
        host = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server_id).host
        assert host == "busy" and asked == []
    finally:
        stack.stop()
