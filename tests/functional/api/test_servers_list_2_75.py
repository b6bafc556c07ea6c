"""Bulk boot, reservation ids, list/detail, project isolation, all_tenants, pagination, delete.
"""

import re

from tests.functional.api.fixtures import ServersWorld as world
from tests.functional.api.journeys import at_version, get_list, json_headers

HEADERS = json_headers("2.75")


def test_bob_boots_one_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # bob boots one server
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "bobs",
                "flavorRef": "101",
                "networks": "none",
                "imageRef": world.IMAGE,
            },
        },
        headers={**HEADERS, "x-auth-token": "bob:7e57000000000000000000000000b0b0"})
    assert resp.status_code == 202, resp.text

    # alice boots three at once and asks for the reservation id
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "web",
                "flavorRef": "101",
                "networks": "none",
                "min_count": 2,
                "max_count": 3,
                "return_reservation_id": True,
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "delete_on_termination": True,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert re.search("^r-[a-z0-9]{8}$", str(resp.json["reservation_id"]))

    # alice sees only her three servers, newest first
    resp = get_list(client, "/v2.1/servers", HEADERS, "servers", 3)
    assert re.search("^web-[123]$", str(resp.json["servers"][0]["name"]))
    assert re.search(r"\/v2.1\/servers\/[0-9a-f-]{36}$",
                     str(resp.json["servers"][0]["links"][0]["href"]))

    # detail lists no volumes until the compute created them
    resp = get_list(client, "/v2.1/servers/detail", HEADERS, "servers", 3)
    assert resp.json["servers"][0]["status"] == "BUILD"
    assert len(resp.json["servers"][0]["os-extended-volumes:volumes_attached"]) == 0

    # names filter
    resp = get_list(client, "/v2.1/servers?name=web-2", HEADERS, "servers", 1)
    assert resp.json["servers"][0]["name"] == "web-2"
    web_2 = resp.json["servers"][0]["id"]

    # status filter
    resp = get_list(client, "/v2.1/servers?status=BUILD", HEADERS, "servers", 3)

    # status filter with no match
    resp = get_list(client, "/v2.1/servers?status=ACTIVE", HEADERS, "servers", 0)

    # unknown status is 400 from 2.38
    resp = client.get("/v2.1/servers?status=SLEEPY", headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Invalid status value"

    # unknown query parameter is 400 from 2.75
    resp = client.get("/v2.1/servers?colour=blue", headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # unknown query parameter is ignored before 2.75
    resp = get_list(client, "/v2.1/servers?colour=blue", at_version(HEADERS, "2.74"), "servers", 3)

    # first page
    resp = get_list(client, "/v2.1/servers?limit=2", HEADERS, "servers", 2)
    assert resp.json["servers_links"][0]["rel"] == "next"
    assert re.search(r"\/v2.1\/servers\?limit=2&marker=[0-9a-f-]{36}$",
                     str(resp.json["servers_links"][0]["href"]))

    # next page
    prev = resp
    resp = get_list(client, prev.json["servers_links"][0]["href"], HEADERS, "servers", 1)
    assert len(resp.json) == 1

    # unknown marker
    resp = client.get("/v2.1/servers?marker=00000000-0000-4000-8000-000000000000", headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "marker [00000000-0000-4000-8000-000000000000] not found")

    # all_tenants needs an admin
    resp = client.get("/v2.1/servers?all_tenants=1", headers=HEADERS)
    assert resp.status_code == 403, resp.text

    # admin sees every project with all_tenants
    resp = client.get(
        "/v2.1/servers?all_tenants=1",
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text
    assert len(resp.json["servers"]) == 4

    # admin sees only its own project without it
    resp = get_list(client, "/v2.1/servers",
                    {**HEADERS, "x-auth-token": "admin:admin-project"}, "servers", 0)

    # find bobs server as admin
    resp = client.get(
        "/v2.1/servers?all_tenants=1&name=bobs",
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text
    assert resp.json["servers"][0]["name"] == "bobs"
    bobs_server = resp.json["servers"][0]["id"]

    # alice cannot see bob's server
    resp = client.get(f"/v2.1/servers/{bobs_server}", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert re.search("^Instance [0-9a-f-]{36} could not be found.$",
                     str(resp.json["itemNotFound"]["message"]))

    # alice cannot delete bob's server
    resp = client.delete(f"/v2.1/servers/{bobs_server}", headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # unknown server
    resp = client.get("/v2.1/servers/00000000-0000-4000-8000-000000000000", headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        "Instance 00000000-0000-4000-8000-000000000000 could not be found.")

    # project-scoped urls work too
    resp = get_list(client, "/v2.1/7e57000000000000000000000000a11c/servers",
                    HEADERS, "servers", 3)
    assert re.search(r"\/v2.1\/7e57000000000000000000000000a11c\/servers\/",
                     str(resp.json["servers"][0]["links"][0]["href"]))

    # alice deletes web-2
    resp = client.delete(f"/v2.1/servers/{web_2}", headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # web-2 is deleting
    resp = client.get(f"/v2.1/servers/{web_2}", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["server"]["OS-EXT-STS:task_state"] == "deleting"
    assert resp.json["server"]["status"] == "BUILD"

    # deleting again is accepted
    resp = client.delete(f"/v2.1/servers/{web_2}", headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # delete an unknown server
    resp = client.delete("/v2.1/servers/00000000-0000-4000-8000-000000000000", headers=HEADERS)
    assert resp.status_code == 404, resp.text

