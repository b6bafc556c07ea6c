"""Availability zones per compute: each compute's configured zone, through the real services.

Two computes, ``fn-nova`` in the default zone and ``fn-east`` configured
with ``[DEFAULT] default_availability_zone = east``; boots go through the
real API, conductor and fake-driver computes.
"""

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import instance as instance_obj

TOKEN = "u1:p1"


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=("fn-nova",))
    stack.add_compute("fn-east", {(None, "default_availability_zone"): "east"})
    yield stack
    stack.stop()


def _zones(stack):
    _, body, _ = stack.api("GET", "/os-availability-zone", token=TOKEN, status=200)
    return {z["zoneName"]: z["zoneState"]["available"] for z in body["availabilityZoneInfo"]}


def _boot(stack, zone, status=202):
    _, body, _ = stack.api("POST", "/servers", {"server": {
        "name": "z", "flavorRef": "42", "availability_zone": zone,
        "block_device_mapping_v2": BLANK_ROOT}}, token=TOKEN, status=status)
    return body


def test_each_compute_reports_its_zone_and_boots_follow_it(stack):
    assert stack.wait(lambda: _zones(stack) == {"east": True, "nova": True},
                      what="both zones listed")
    _, detail, _ = stack.api("GET", "/os-availability-zone/detail", status=200)
    hosts = {z["zoneName"]: sorted(z["hosts"]) for z in detail["availabilityZoneInfo"]}
    # NOTE: membership, not equality: fake:// is one bus per process, so a
    # compute an earlier test left running may heartbeat into this stack too.
    assert hosts["east"] == ["fn-east"] and "fn-nova" in hosts["nova"]
    for zone in ("east", "nova", "east"):
        server_id = _boot(stack, zone)["server"]["id"]
        stack.wait_for_server_status(server_id, "ACTIVE")
        host = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server_id).host
        assert (host == "fn-east") == (zone == "east"), (zone, host)
        assert stack.server(server_id)["OS-EXT-AZ:availability_zone"] == zone
    fault = _boot(stack, "west", status=400)
    assert fault["badRequest"]["message"] == \
        "The requested availability zone is not available"


def test_a_zone_whose_computes_are_down_is_not_available(stack):
    stack.wait(lambda: "east" in _zones(stack), what="zone east listed")
    stack.computes["fn-east"].stop()
    stack.conf.set_override("service_down_time", 2)
    assert stack.wait(lambda: _zones(stack) == {"east": False, "nova": True},
                      what="zone east unavailable once its compute is down")
