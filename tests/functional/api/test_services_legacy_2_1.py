"""os-services below 2.53: integer ids, PUT /os-services/{action} with host and binary.
"""

from tests.functional.api import fixtures
from tests.functional.api.journeys import ADMIN_TOKEN, json_headers

world = fixtures.ServicesWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.1", ADMIN_TOKEN, legacy=True)


def test_list_has_integer_ids_and_no_forced_down(client):
    """List has integer ids and no forced_down."""
    resp = client.get("/v2.1/os-services", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert "\"disabled_reason\"" in resp.text
    assert resp.json["services"][0]["id"] == 1
    assert resp.json["services"][0]["host"] == "compute-up"
    assert resp.json["services"][0]["state"] == "up"


def test_forced_down_appears_at_2_11(client):
    """Forced_down appears at 2.11."""
    resp = client.get(
        "/v2.1/os-services",
        headers={**HEADERS, "x-openstack-nova-api-version": "2.11"})
    assert resp.status_code == 200, resp.text
    assert resp.json["services"][0]["forced_down"] is False


def test_disable_by_host_and_binary_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # disable by host and binary
    resp = client.put(
        "/v2.1/os-services/disable-log-reason",
        json={
            "host": "compute-up",
            "binary": "volumesvc-compute",
            "disabled_reason": "tests",
        },
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["service"]["host"] == "compute-up"
    assert resp.json["service"]["status"] == "disabled"
    assert resp.json["service"]["disabled_reason"] == "tests"

    # enable by host and binary
    resp = client.put(
        "/v2.1/os-services/enable",
        json={"host": "compute-up", "binary": "volumesvc-compute"},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["service"]["status"] == "enabled"

    # force-down is not an action at 2.1
    resp = client.put(
        "/v2.1/os-services/force-down",
        json={"host": "compute-up", "binary": "volumesvc-compute"},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # force-down at 2.11
    resp = client.put(
        "/v2.1/os-services/force-down",
        json={"host": "compute-up", "binary": "volumesvc-compute", "forced_down": True},
        headers={**HEADERS, "x-openstack-nova-api-version": "2.11"})
    assert resp.status_code == 200, resp.text
    assert resp.json["service"]["forced_down"] is True

    # forced_down key is 400 at 2.1
    resp = client.put(
        "/v2.1/os-services/disable",
        json={"host": "compute-up", "binary": "volumesvc-compute", "forced_down": True},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # unknown host is 404
    resp = client.put(
        "/v2.1/os-services/disable",
        json={"host": "nowhere", "binary": "volumesvc-compute"},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # delete by integer id
    resp = client.delete("/v2.1/os-services/2", headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # delete with a non-integer id is 400
    resp = client.delete("/v2.1/os-services/abc", headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # delete unknown id is 404
    resp = client.delete("/v2.1/os-services/99", headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # Regression: an id beyond the database's INTEGER range was a driver error (500).
    # delete an id no integer column can hold is 404
    resp = client.delete("/v2.1/os-services/99999999999999999999", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["code"] == 404

    # delete a negative id is 404
    resp = client.delete("/v2.1/os-services/-1", headers=HEADERS)
    assert resp.status_code == 404, resp.text

