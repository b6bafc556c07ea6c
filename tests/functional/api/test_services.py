"""os-services at 2.53+: uuids, up/down, filters, enable/disable/force down, delete.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import ADMIN_TOKEN, at_version, get_list, json_headers

world = fixtures.ServicesWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.53", ADMIN_TOKEN)


def test_list_all_services(client):
    """List all services."""
    resp = get_list(client, "/v2.1/os-services", HEADERS, "services", 3)
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["services"][0]["id"]))
    assert resp.json["services"][0]["host"] == "compute-up"
    assert resp.json["services"][0]["binary"] == "volumesvc-compute"
    assert resp.json["services"][0]["zone"] == "nova"
    assert resp.json["services"][0]["status"] == "enabled"
    assert resp.json["services"][0]["state"] == "up"
    assert resp.json["services"][0]["forced_down"] is False
    assert resp.json["services"][0]["disabled_reason"] is None
    assert resp.json["services"][1]["host"] == "compute-down"
    assert resp.json["services"][1]["state"] == "down"
    assert resp.json["services"][2]["binary"] == "volumesvc-conductor"
    assert resp.json["services"][2]["zone"] == "internal"


def test_filter_by_host_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # filter by host
    resp = get_list(client, "/v2.1/os-services?host=compute-down", HEADERS, "services", 1)
    assert resp.json["services"][0]["state"] == "down"
    down_compute = resp.json["services"][0]["id"]

    # filter by binary
    resp = get_list(client, "/v2.1/os-services?binary=volumesvc-conductor", HEADERS, "services", 1)
    assert resp.json["services"][0]["host"] == "controller"
    conductor = resp.json["services"][0]["id"]

    # unknown query parameter ignored below 2.75
    resp = get_list(client, "/v2.1/os-services?colour=blue", HEADERS, "services", 3)

    # unknown query parameter is 400 from 2.75
    resp = client.get("/v2.1/os-services?colour=blue", headers=at_version(HEADERS, "2.75"))
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    # get the up compute
    resp = client.get(
        "/v2.1/os-services?host=compute-up&binary=volumesvc-compute",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    up_compute = resp.json["services"][0]["id"]

    # disable with a reason
    resp = client.put(
        f"/v2.1/os-services/{up_compute}",
        json={"status": "disabled", "disabled_reason": "maintenance"},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["service"]["id"] == up_compute
    assert resp.json["service"]["status"] == "disabled"
    assert resp.json["service"]["disabled_reason"] == "maintenance"
    assert resp.json["service"]["state"] == "up"

    # reason with enabled is 400
    resp = client.put(
        f"/v2.1/os-services/{up_compute}",
        json={"status": "enabled", "disabled_reason": "nope"},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # empty update is 400
    resp = client.put(
        f"/v2.1/os-services/{up_compute}",
        json={},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # force down makes it down
    resp = client.put(
        f"/v2.1/os-services/{up_compute}",
        json={"forced_down": True},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["service"]["forced_down"] is True
    assert resp.json["service"]["state"] == "down"

    # enable clears the reason
    resp = client.put(
        f"/v2.1/os-services/{up_compute}",
        json={"status": "enabled", "forced_down": False},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["service"]["status"] == "enabled"
    assert resp.json["service"]["disabled_reason"] is None
    assert resp.json["service"]["state"] == "up"

    # non compute service cannot be updated
    resp = client.put(
        f"/v2.1/os-services/{conductor}",
        json={"status": "disabled"},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("Only compute services can be updated",
                     str(resp.json["badRequest"]["message"]))

    # invalid uuid is 400
    resp = client.put("/v2.1/os-services/not-a-uuid", json={"status": "disabled"}, headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # unknown uuid is 404
    resp = client.put(
        "/v2.1/os-services/5f0a2c4e-6c3e-4f5a-9f1e-0a1b2c3d4e5f",
        json={"status": "disabled"},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["code"] == 404

    # non-admin cannot update
    resp = client.put(
        f"/v2.1/os-services/{up_compute}",
        json={"status": "disabled"},
        headers={**HEADERS, "x-auth-token": "alice:p1"})
    assert resp.status_code == 403, resp.text

    # non-admin cannot delete
    resp = client.delete(
        f"/v2.1/os-services/{down_compute}",
        headers={**HEADERS, "x-auth-token": "alice:p1"})
    assert resp.status_code == 403, resp.text

    # delete the down compute
    resp = client.delete(f"/v2.1/os-services/{down_compute}", headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # deleted service is gone
    resp = get_list(client, "/v2.1/os-services", HEADERS, "services", 2)

    # delete again is 404
    resp = client.delete(f"/v2.1/os-services/{down_compute}", headers=HEADERS)
    assert resp.status_code == 404, resp.text

