"""/os-availability-zone: the zones of the compute services, list and admin detail."""

from volumesvc import binaries
from volumesvc.objects import service as service_obj


def _zones(stack, path="/os-availability-zone", token="member:p", status=200):
    _, body, _ = stack.api("GET", path, token=token, status=status)
    return body


def test_list_shows_the_compute_zone_and_detail_is_admin_only(stack):
    assert _zones(stack) == {"availabilityZoneInfo": [
        {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None}]}
    status, fault, _ = stack.api("GET", "/os-availability-zone/detail", token="member:p")
    assert status == 403 and "forbidden" in fault
    detail = {zone["zoneName"]: zone for zone in
              _zones(stack, "/os-availability-zone/detail", token="admin:admin")[
                  "availabilityZoneInfo"]}
    compute = detail["nova"]["hosts"]["fn-compute"][binaries.COMPUTE]
    assert compute["available"] is True and compute["active"] is True
    assert compute["updated_at"]
    assert set(detail) <= {"nova", "internal"}


def test_a_zone_whose_computes_are_all_disabled_is_unavailable(stack):
    (service,) = service_obj.list_services(stack.db, stack.admin_context(),
                                           binary=binaries.COMPUTE)
    stack.api("PUT", f"/os-services/{service.uuid}", {"status": "disabled"},
              version="2.53", status=200)
    assert _zones(stack)["availabilityZoneInfo"] == [
        {"zoneName": "nova", "zoneState": {"available": False}, "hosts": None}]


def test_a_compute_in_another_zone_adds_that_zone(stack):
    import sqlalchemy as sa

    from volumesvc.db import models

    with stack.db.writer(stack.admin_context()) as session:
        session.execute(sa.update(models.Service)
                        .where(models.Service.binary == binaries.COMPUTE)
                        .values(availability_zone="az-east"))
    assert [z["zoneName"] for z in _zones(stack)["availabilityZoneInfo"]] == ["az-east"]
