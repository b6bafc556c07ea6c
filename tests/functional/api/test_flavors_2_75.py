"""Flavors at 2.55 (description), 2.61 (extra_specs) and 2.75 (integer swap, strict query).
"""


from tests.functional.api import fixtures
from tests.functional.api.journeys import ADMIN_TOKEN, at_version, json_headers

world = fixtures.World  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.75", ADMIN_TOKEN)


def test_create_with_a_description_and_check_the_2_75_shape_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # create with a description and check the 2.75 shape
    resp = client.post(
        "/v2.1/flavors",
        json={
            "flavor": {
                "name": "described",
                "id": "200",
                "ram": 128,
                "vcpus": 1,
                "disk": 1,
                "description": "a small one",
            },
        },
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavor"]["description"] == "a small one"
    assert resp.json["flavor"]["swap"] == 0
    assert resp.json["flavor"]["extra_specs"] == {}

    # list has descriptions from 2.55
    resp = client.get("/v2.1/flavors", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavors"][0]["description"] is None
    assert len(resp.json["flavors"][0]) == 4

    # detail at 2.75 has extra_specs and an integer swap
    resp = client.get("/v2.1/flavors/detail", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["flavors"][0]["swap"] == 0
    assert resp.json["flavors"][0]["extra_specs"] == {}

    # at 2.55 there are no extra_specs yet
    resp = client.get("/v2.1/flavors/200", headers=at_version(HEADERS, "2.55"))
    assert resp.status_code == 200, resp.text
    assert resp.json["flavor"]["description"] == "a small one"
    assert resp.json["flavor"]["swap"] == ""
    assert len(resp.json["flavor"]) == 12

    # at 2.61 extra_specs appear
    resp = client.get("/v2.1/flavors/200", headers=at_version(HEADERS, "2.61"))
    assert resp.status_code == 200, resp.text
    assert resp.json["flavor"]["extra_specs"] == {}
    assert len(resp.json["flavor"]) == 13

    # members see extra_specs too (project reader rule)
    resp = client.get("/v2.1/flavors/1", headers={**HEADERS, "x-auth-token": "demo:demo-project"})
    assert resp.status_code == 200, resp.text
    assert resp.json["flavor"]["extra_specs"] == {}

    # unknown query parameters are a 400 from 2.75
    resp = client.get("/v2.1/flavors?colour=blue", headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # on detail too
    resp = client.get("/v2.1/flavors/detail?colour=blue", headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # show ignores unknown query parameters before 2.102
    resp = client.get("/v2.1/flavors/1?colour=blue", headers=HEADERS)
    assert resp.status_code == 200, resp.text

    # and refuses them from 2.102
    resp = client.get("/v2.1/flavors/1?colour=blue", headers=at_version(HEADERS, "2.102"))
    assert resp.status_code == 400, resp.text

    # delete
    resp = client.delete("/v2.1/flavors/200", headers=HEADERS)
    assert resp.status_code == 202, resp.text

