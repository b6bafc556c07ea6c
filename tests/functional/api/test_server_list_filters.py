"""The server list filters per microversion and role, the 2.74 boot to a host and 2.98 images.

Servers are rows written straight into the database (their times, states and
hosts chosen); the requests go through the whole app as a client sends them.
"""


import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import (
    ADMIN,
    ALICE,
    ZONE_HOST,
    FilterWorld,
    ServersWorld,
    filter_server_uuid,
)


@pytest.fixture
def api():
    with fixtures.open_world(FilterWorld) as (app, deps):
        yield app.test_client(), deps


def _names(client, query, version, headers=ALICE, status=200):
    resp = client.get(f"/v2.1/servers/detail?{query}",
                      headers={**headers, "OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == status, resp.json
    if status != 200:
        return resp.json["badRequest"]["message"]
    return sorted(s["name"] for s in resp.json["servers"])


def test_name_is_a_regular_expression(api):
    client, _ = api
    assert _names(client, "name=^web-1", "2.1") == ["web-1", "web-10", "web-11"]
    assert _names(client, "name=^web-1$", "2.1") == ["web-1"]
    assert _names(client, "name=web-(2|11)$", "2.90") == ["web-11", "web-2"]
    assert "regular expression" in _names(client, "name=web-(", "2.1", status=400)


def test_changes_since_lists_deleted_servers_and_changes_before_starts_at_2_66(api):
    client, _ = api
    since = "2026-03-01T22:00:00Z"  # after web-2's last change, before web-10's
    assert _names(client, f"changes-since={since}", "2.1") == ["web-10", "web-11", "web-12"]
    before = "2026-03-01T14:00:00%2B00:00"  # web-1 changed at 13:30, web-2 at 14:30
    assert _names(client, f"changes-before={before}", "2.66") == ["web-1"]
    # Below 2.66 the key is no filter: every live server.
    assert _names(client, f"changes-before={before}", "2.65") == [
        "web-1", "web-10", "web-11", "web-2"]
    message = _names(client, f"changes-since={since}&changes-before={before}", "2.66",
                     status=400)
    assert "changes-since must be less than or equal to changes-before" in message
    assert "is not a 'date-time'" in _names(client, "changes-since=yesterday", "2.1",
                                            status=400)


def test_2_83_opens_the_admin_filters_to_owners(api):
    client, _ = api
    everything = ["web-1", "web-10", "web-11", "web-2"]
    # Before 2.83 an owner's key_name filter is ignored; an admin's is applied.
    assert _names(client, "key_name=other", "2.82") == everything
    assert _names(client, "key_name=other&all_tenants=1", "2.82", ADMIN) == ["web-2"]
    assert _names(client, "key_name=other", "2.83") == ["web-2"]
    assert _names(client, "power_state=4", "2.83") == ["web-2"]
    assert _names(client, "power_state=shutdown", "2.83") == []
    assert _names(client, "vm_state=stopped&vm_state=error", "2.83") == ["web-2"]
    assert _names(client, "user_id=bob", "2.83") == ["web-11"]
    assert _names(client, "launched_at=2026-03-01T12:00:00Z", "2.83") == ["web-10"]
    assert _names(client, "created_at=2026-03-01 2[23]", "2.83") == ["web-10", "web-11"]
    assert _names(client, "progress=0", "2.83") == everything
    assert _names(client, "config_drive=True", "2.83") == []


def test_availability_zone_filter_is_the_zone_of_the_host(api):
    client, _ = api
    assert _names(client, "availability_zone=east", "2.83") == ["web-10"]
    assert _names(client, "availability_zone=^nova$", "2.83") == ["web-1", "web-11", "web-2"]
    assert _names(client, "availability_zone=east", "2.82") == [
        "web-1", "web-10", "web-11", "web-2"]
    server = client.get(f"/v2.1/servers/{filter_server_uuid(10)}", headers=ALICE).json["server"]
    assert server["OS-EXT-AZ:availability_zone"] == "east"


def test_flavor_image_and_locked_filters(api):
    client, _ = api
    assert _names(client, "flavor=102", "2.1") == ["web-11"]
    assert _names(client, "flavor=no-such-flavor", "2.1") == []
    assert _names(client, f"image={ServersWorld.IMAGE}", "2.1") == ["web-11"]
    assert _names(client, "locked=true", "2.73") == ["web-11"]
    assert _names(client, "locked=false", "2.73") == ["web-1", "web-10", "web-2"]
    assert _names(client, "locked=true", "2.72") == ["web-1", "web-10", "web-11", "web-2"]
    assert "locked" in _names(client, "locked=maybe", "2.73", status=400)


def test_admin_only_filters_are_ignored_for_owners(api):
    client, _ = api
    second = filter_server_uuid(2)
    assert _names(client, f"uuid={second}", "2.90") == ["web-1", "web-10", "web-11", "web-2"]
    assert _names(client, f"uuid={second}&all_tenants=1", "2.90", ADMIN) == ["web-2"]
    assert _names(client, f"node={ZONE_HOST}&all_tenants=1", "2.90", ADMIN) == ["web-10"]


def _boot(client, server, version, headers):
    return client.post("/v2.1/servers", json={"server": {
        "name": "to-host", "flavorRef": "101", "imageRef": ServersWorld.IMAGE,
        **({"networks": "none"} if version not in ("2.1", "2.2") else {}), **server}},
        headers={**headers, "OpenStack-API-Version": f"compute {version}"})


def test_2_74_boot_to_a_host_is_for_admins_and_checks_the_host(api):
    client, deps = api
    assert _boot(client, {"host": ZONE_HOST}, "2.73", ADMIN).status_code == 400
    assert _boot(client, {"host": ZONE_HOST}, "2.74", ALICE).status_code == 403
    resp = _boot(client, {"host": "nowhere"}, "2.74", ADMIN)
    assert resp.status_code == 400
    assert resp.json["badRequest"]["message"] == "Compute host nowhere could not be found."
    resp = _boot(client, {"host": ZONE_HOST, "hypervisor_hostname": fixtures.COMPUTE_UP_HOST},
                 "2.74", ADMIN)
    assert resp.status_code == 400
    deps.conductor.casts.clear()
    resp = _boot(client, {"hypervisor_hostname": ZONE_HOST}, "2.74", ADMIN)
    assert resp.status_code == 202, resp.json
    (cast,) = deps.conductor.casts
    assert cast[1]["request_spec"]["requested_host"] == ZONE_HOST


def test_a_boot_into_a_zone_without_computes_is_refused(api):
    client, deps = api
    resp = _boot(client, {"availability_zone": "west"}, "2.1", ALICE)
    assert resp.status_code == 400
    assert resp.json["badRequest"]["message"] == \
        "The requested availability zone is not available"
    deps.conductor.casts.clear()
    assert _boot(client, {"availability_zone": "east"}, "2.1", ALICE).status_code == 202
    (cast,) = deps.conductor.casts
    assert cast[1]["request_spec"]["availability_zone"] == "east"


def test_2_98_shows_the_image_properties_kept_at_boot(api):
    client, deps = api
    deps.glance.images[ServersWorld.IMAGE].update(hw_disk_bus="scsi", img_signature="secret")
    uuid = _boot(client, {}, "2.1", ALICE).json["server"]["id"]
    deps.glance.images[ServersWorld.IMAGE]["hw_disk_bus"] = "changed later"
    headers = {**ALICE, "OpenStack-API-Version": "compute 2.98"}
    image = client.get(f"/v2.1/servers/{uuid}", headers=headers).json["server"]["image"]
    assert image["id"] == ServersWorld.IMAGE
    assert image["properties"] == {
        "hw_disk_bus": "scsi", "min_ram": "0", "min_disk": "1", "disk_format": "raw",
        "container_format": "bare", "base_image_ref": ServersWorld.IMAGE}
    listed = client.get("/v2.1/servers/detail", headers=headers).json["servers"]
    assert [s["image"]["properties"]["hw_disk_bus"] for s in listed if s["id"] == uuid] == [
        "scsi"]
    headers["OpenStack-API-Version"] = "compute 2.97"
    image = client.get(f"/v2.1/servers/{uuid}", headers=headers).json["server"]["image"]
    assert "properties" not in image
