"""Instance actions at 2.58 (updated_at, paging, changes-since), 2.62 (hostId/host), 2.84
(details).
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.journeys import (
    assert_fault,
    at_version,
    get_list,
    instance_actions_url,
    json_headers,
)
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.84", "demo:demo-project", content_type=False)
CREATE_REQUEST = "req-5eed0000-0000-4000-8000-000000000001"


def test_list_with_updated_at(client):
    """List with updated_at."""
    resp = get_list(client, instance_actions_url(server_uuid("ACTIONS")),
                    HEADERS, "instanceActions", 5)
    assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$",
                     str(resp.json["instanceActions"][0]["updated_at"]))
    assert len(resp.json["instanceActions"][0]) == 8


def test_limit_gives_a_next_link(client):
    """Limit gives a next link."""
    resp = get_list(client, f"{instance_actions_url(server_uuid('ACTIONS'))}?limit=2",
                    HEADERS, "instanceActions", 2)
    assert resp.json["instanceActions"][1]["action"] == "attach_volume"
    assert resp.json["links"][0]["rel"] == "next"
    assert re.search(
        r"os-instance-actions\?limit=2&marker=req-5eed0000-0000-4000-8000-000000000004$",
        str(resp.json["links"][0]["href"]))


def test_follow_the_marker(client):
    """Follow the marker."""
    resp = client.get(
        f"{instance_actions_url(server_uuid('ACTIONS'))}?limit=2&marker=req-5eed0000-0000-4000-8000-000000000004",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "createImage"
    assert resp.json["instanceActions"][1]["action"] == "reboot"


@pytest.mark.parametrize("query, status, message", [
    pytest.param("?marker=req-nope", 400, "Marker req-nope could not be found.",
                 id="an_unknown_marker_is_a_400"),
    pytest.param("?changes-since=2999-01-01T00:00:00Z", 200, None,
                 id="changes_since_in_the_future_gives_nothing"),
    pytest.param("?changes-before=2000-01-01T00:00:00Z", 200, None,
                 id="changes_before_in_the_past_gives_nothing"),
    pytest.param("?changes-since=2030-01-01T00:00:00Z&changes-before=2020-01-01T00:00:00Z", 400,
                 None, id="changes_since_after_changes_before_is_a_400"),
    pytest.param("?changes-since=yesterday", 400, None, id="a_bad_date_is_a_400"),
    pytest.param("?colour=blue", 400, None, id="unknown_query_parameters_are_a_400_from_2_58"),
])
def test_list_query(client, query, status, message):
    resp = client.get(instance_actions_url(server_uuid("ACTIONS"), query=query), headers=HEADERS)
    assert_fault(resp, status, message)
    if status == 200:
        assert len(resp.json["instanceActions"]) == 0


def test_the_owner_sees_events_with_hostid_and_details_no_host_or_traceback(client):
    """The owner sees events with hostId and details, no host or traceback."""
    resp = client.get(
        instance_actions_url(server_uuid("ACTIONS"), CREATE_REQUEST),
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert re.search(r"^\d{4}-", str(resp.json["instanceAction"]["updated_at"]))
    assert len(resp.json["instanceAction"]["events"]) == 2
    assert re.search("^[0-9a-f]{56}$", str(resp.json["instanceAction"]["events"][0]["hostId"]))
    assert resp.json["instanceAction"]["events"][0]["details"] == "built"
    assert resp.json["instanceAction"]["events"][1]["details"] == "device busy"
    assert len(resp.json["instanceAction"]["events"][0]) == 6


def test_an_admin_also_sees_host_and_traceback(client):
    """An admin also sees host and traceback."""
    resp = client.get(
        instance_actions_url(server_uuid("ACTIONS"), CREATE_REQUEST),
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceAction"]["events"][0]["host"] == "compute-up"
    assert resp.json["instanceAction"]["events"][1]["traceback"] == (
        "Traceback (most recent call last): boom")
    assert len(resp.json["instanceAction"]["events"][0]) == 8


def test_at_2_62_there_are_no_details_yet(client):
    """At 2.62 there are no details yet."""
    resp = client.get(
        instance_actions_url(server_uuid("ACTIONS"), CREATE_REQUEST),
        headers=at_version(HEADERS, "2.62"))
    assert resp.status_code == 200, resp.text
    assert len(resp.json["instanceAction"]["events"][0]) == 5


def test_a_reboot_shows_up_as_the_newest_action_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # a reboot shows up as the newest action
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ACTIONS')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers={**HEADERS, "content-type": "application/json"})
    assert resp.status_code == 202, resp.text

    # the reboot action can be fetched by its request id
    resp = client.get(f"{instance_actions_url(server_uuid('ACTIONS'))}?limit=1", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "reboot"
    assert resp.json["instanceActions"][0]["user_id"] == "demo"

    # show with an unknown query parameter is fine before 2.102
    resp = client.get(
        f"/v2.1/servers/{server_uuid('ACTIONS')}/os-instance-actions/req-5eed0000-0000-4000-8000-000000000002?x=1",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceAction"]["events"] == []

