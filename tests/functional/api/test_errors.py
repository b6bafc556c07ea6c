"""Fault bodies for unknown routes, wrong methods, auth and policy failures.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import ADMIN_TOKEN, json_headers

world = fixtures.World  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.53", ADMIN_TOKEN, content_type=False)


def test_unknown_route_is_a_404_fault(client):
    """Unknown route is a 404 fault."""
    resp = client.get("/v2.1/os-nothing", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["code"] == 404
    assert resp.json["itemNotFound"]["message"] == "The resource could not be found."


def test_unknown_route_with_project_prefix_is_a_404_fault(client):
    """Unknown route with project prefix is a 404 fault."""
    resp = client.get("/v2.1/0123abcd/os-nothing", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["code"] == 404


def test_wrong_method_is_a_405_fault_with_allow(client):
    """Wrong method is a 405 fault with Allow."""
    resp = client.post("/v2.1/os-services", headers=HEADERS)
    assert resp.status_code == 405, resp.text
    assert resp.headers["allow"] == "GET"
    assert resp.headers["openstack-api-version"] == "compute 2.53"
    assert resp.json["badMethod"]["code"] == 405


def test_405_lists_every_method_of_the_path(client):
    """405 lists every method of the path."""
    resp = client.get("/v2.1/os-services/5f0a2c4e-6c3e-4f5a-9f1e-0a1b2c3d4e5f", headers=HEADERS)
    assert resp.status_code == 405, resp.text
    assert resp.headers["allow"] == "DELETE, PUT"


def test_project_id_with_other_characters_is_not_a_route(client):
    """Project id with other characters is not a route."""
    resp = client.get("/v2.1/not_a_project!/os-services", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["code"] == 404


def test_project_id_must_match_the_caller(client):
    """Project id must match the caller."""
    resp = client.get("/v2.1/0123abcd/os-services", headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("doesn't match Context's project_id", str(resp.json["badRequest"]["message"]))


def test_project_id_prefix_works(client):
    """Project id prefix works."""
    resp = client.get(
        "/v2.1/c0ffee00-0000-4000-8000-000000000001/os-services",
        headers={**HEADERS, "x-auth-token": "admin:c0ffee00-0000-4000-8000-000000000001"})
    assert resp.status_code == 200, resp.text


def test_missing_token_is_401(client):
    """Missing token is 401."""
    resp = client.get("/v2.1/os-services", headers={**HEADERS, "x-auth-token": ""})
    assert resp.status_code == 401, resp.text
    assert resp.json["unauthorized"]["code"] == 401


def test_non_admin_is_403(client):
    """Non-admin is 403."""
    resp = client.get("/v2.1/os-services", headers={**HEADERS, "x-auth-token": "alice:p1"})
    assert resp.status_code == 403, resp.text
    assert resp.json["forbidden"]["code"] == 403
    assert re.search("os_compute_api:os-services:list", str(resp.json["forbidden"]["message"]))


def test_malformed_json_is_400(client):
    """Malformed json is 400."""
    resp = client.put(
        "/v2.1/os-services/5f0a2c4e-6c3e-4f5a-9f1e-0a1b2c3d4e5f",
        data="{not json",
        headers={**HEADERS, "content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400


def test_unknown_body_key_is_400(client):
    """Unknown body key is 400."""
    resp = client.put(
        "/v2.1/os-services/5f0a2c4e-6c3e-4f5a-9f1e-0a1b2c3d4e5f",
        json={"status": "enabled", "colour": "blue"},
        headers={**HEADERS, "content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert re.search("Additional properties are not allowed",
                     str(resp.json["badRequest"]["message"]))

