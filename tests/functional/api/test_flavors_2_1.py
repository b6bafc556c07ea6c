"""Flavors at 2.1: list, detail shape (swap "" when 0), filters, pagination, admin create/delete.
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.journeys import ADMIN_TOKEN, assert_fault, get_list, json_headers

world = fixtures.World  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.1", "demo:demo-project", legacy=True)
ADMIN = {**HEADERS, "x-auth-token": ADMIN_TOKEN}


def test_list_the_default_flavors_sorted_by_flavorid(client):
    """List the default flavors, sorted by flavorid."""
    resp = get_list(client, "/v2.1/flavors", HEADERS, "flavors", 6)
    assert resp.json["flavors"][0]["id"] == "1"
    assert resp.json["flavors"][0]["name"] == "m1.tiny"
    assert resp.json["flavors"][0]["links"][0]["rel"] == "self"
    assert re.search("http://.+/v2.1/flavors/1$", str(resp.json["flavors"][0]["links"][0]["href"]))
    assert resp.json["flavors"][0]["links"][1]["rel"] == "bookmark"
    assert re.search("http://[^/]+/flavors/1$", str(resp.json["flavors"][0]["links"][1]["href"]))
    assert resp.json["flavors"][4]["id"] == "42"
    assert resp.json["flavors"][4]["name"] == "m1.nano"


def test_brief_entries_have_no_description_below_2_55(client):
    """Brief entries have no description below 2.55."""
    resp = client.get("/v2.1/flavors", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert "location" not in resp.headers
    assert len(resp.json["flavors"][0]) == 3


def test_detail_shows_every_2_1_field(client):
    """Detail shows every 2.1 field."""
    resp = get_list(client, "/v2.1/flavors/detail?minRam=4096", HEADERS, "flavors", 3)
    assert resp.json["flavors"][0]["id"] == "3"
    assert resp.json["flavors"][0]["ram"] == 4096
    assert resp.json["flavors"][0]["disk"] == 40
    assert resp.json["flavors"][0]["vcpus"] == 2
    assert resp.json["flavors"][0]["swap"] == ""
    assert resp.json["flavors"][0]["OS-FLV-EXT-DATA:ephemeral"] == 0
    assert resp.json["flavors"][0]["OS-FLV-DISABLED:disabled"] is False
    assert resp.json["flavors"][0]["os-flavor-access:is_public"] is True
    assert resp.json["flavors"][0]["rxtx_factor"] == 1.0


def test_mindisk_filter(client):
    """MinDisk filter."""
    resp = get_list(client, "/v2.1/flavors?minDisk=80", HEADERS, "flavors", 2)
    assert resp.json["flavors"][0]["id"] == "4"
    assert resp.json["flavors"][1]["id"] == "5"


def test_limit_gives_a_next_link(client):
    """Limit gives a next link."""
    resp = get_list(client, "/v2.1/flavors?limit=2", HEADERS, "flavors", 2)
    assert resp.json["flavors_links"][0]["rel"] == "next"
    assert re.search(r"flavors\?limit=2&marker=2$", str(resp.json["flavors_links"][0]["href"]))


def test_follow_the_marker(client):
    """Follow the marker."""
    resp = client.get("/v2.1/flavors?limit=2&marker=2", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavors"][0]["id"] == "3"
    assert resp.json["flavors"][1]["id"] == "4"


def test_sort_by_memory_descending(client):
    """Sort by memory, descending."""
    resp = client.get("/v2.1/flavors/detail?sort_key=memory_mb&sort_dir=desc", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavors"][0]["name"] == "m1.xlarge"
    assert resp.json["flavors"][5]["name"] == "m1.nano"


@pytest.mark.parametrize("url, status, message", [
    pytest.param("/v2.1/flavors?minRam=lots", 400, "Invalid minRam filter [lots]",
                 id="a_bad_minram_is_a_400"),
    pytest.param("/v2.1/flavors?marker=nope", 400, "marker [nope] not found",
                 id="an_unknown_marker_is_a_400"),
    pytest.param("/v2.1/flavors?sort_key=colour", 400, None, id="a_bad_sort_key_is_a_400"),
    pytest.param("/v2.1/flavors?colour=blue", 200, None,
                 id="unknown_query_parameters_are_ignored_below_2_75"),
    pytest.param("/v2.1/flavors/nope", 404, "Flavor nope could not be found.",
                 id="an_unknown_flavor_is_a_404"),
])
def test_status(client, url, status, message):
    assert_fault(client.get(url, headers=HEADERS), status, message)


def test_show_one_flavor(client):
    """Show one flavor."""
    resp = client.get("/v2.1/flavors/42", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavor"]["name"] == "m1.nano"
    assert resp.json["flavor"]["ram"] == 128
    assert resp.json["flavor"]["swap"] == ""


def test_a_member_cannot_create_flavors(client):
    """A member cannot create flavors."""
    resp = client.post(
        "/v2.1/flavors",
        json={"flavor": {"name": "m1.mine", "ram": 128, "vcpus": 1, "disk": 1}},
        headers=HEADERS)
    assert resp.status_code == 403, resp.text


def test_an_admin_creates_a_private_flavor_with_swap_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # an admin creates a private flavor with swap
    resp = client.post(
        "/v2.1/flavors",
        json={
            "flavor": {
                "name": "test.private",
                "id": "100",
                "ram": "256",
                "vcpus": 2,
                "disk": 3,
                "swap": 512,
                "OS-FLV-EXT-DATA:ephemeral": 1,
                "rxtx_factor": 2.5,
                "os-flavor-access:is_public": False,
            },
        },
        headers=ADMIN)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavor"]["id"] == "100"
    assert resp.json["flavor"]["ram"] == 256
    assert resp.json["flavor"]["swap"] == 512
    assert resp.json["flavor"]["OS-FLV-EXT-DATA:ephemeral"] == 1
    assert resp.json["flavor"]["os-flavor-access:is_public"] is False
    assert resp.json["flavor"]["rxtx_factor"] == 2.5

    # the same id again is a 409
    resp = client.post(
        "/v2.1/flavors",
        json={"flavor": {"name": "other", "id": "100", "ram": 256, "vcpus": 1, "disk": 1}},
        headers=ADMIN)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["code"] == 409

    for step, flavor, status in [
        ("the same name again is a 409",
         {"name": "test.private", "ram": 256, "vcpus": 1, "disk": 1}, 409),
        ("ram must be positive", {"name": "zero", "ram": 0, "vcpus": 1, "disk": 1}, 400),
        ("description is not accepted below 2.55",
         {"name": "d", "ram": 1, "vcpus": 1, "disk": 1, "description": "x"}, 400),
    ]:
        resp = client.post("/v2.1/flavors", json={"flavor": flavor}, headers=ADMIN)
        assert_fault(resp, status, step=step)

    # without an id the flavor gets a uuid
    resp = client.post(
        "/v2.1/flavors",
        json={"flavor": {"name": "generated", "ram": 64, "vcpus": 1, "disk": 0}},
        headers=ADMIN)
    assert resp.status_code == 200, resp.text
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["flavor"]["id"]))

    # members do not see the private flavor
    resp = client.get("/v2.1/flavors/100", headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # nor in the list
    resp = get_list(client, "/v2.1/flavors?is_public=none", HEADERS, "flavors", 7)

    # admins see it with is_public=false
    resp = get_list(client, "/v2.1/flavors?is_public=false", ADMIN, "flavors", 1)
    assert resp.json["flavors"][0]["id"] == "100"

    # admins see everything with is_public=none
    resp = get_list(client, "/v2.1/flavors?is_public=none", ADMIN, "flavors", 8)

    # a bad is_public is a 400 for admins
    resp = client.get("/v2.1/flavors?is_public=maybe", headers=ADMIN)
    assert resp.status_code == 400, resp.text

    # a member cannot delete
    resp = client.delete("/v2.1/flavors/100", headers=HEADERS)
    assert resp.status_code == 403, resp.text

    # an admin deletes it
    resp = client.delete("/v2.1/flavors/100", headers=ADMIN)
    assert resp.status_code == 202, resp.text

    # it is gone
    resp = client.delete("/v2.1/flavors/100", headers=ADMIN)
    assert resp.status_code == 404, resp.text

