"""Instance actions below 2.58: no updated_at, events for admins only until 2.51.
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.journeys import (
    assert_fault,
    get_list,
    instance_actions_url,
    json_headers,
)
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.1", "demo:demo-project", content_type=False, legacy=True)
CREATE_REQUEST = "req-5eed0000-0000-4000-8000-000000000001"


def test_list_the_actions_newest_first(client):
    """List the actions, newest first."""
    resp = get_list(client, instance_actions_url(server_uuid("ACTIONS")),
                    HEADERS, "instanceActions", 5)
    assert resp.json["instanceActions"][0]["action"] == "detach_volume"
    assert resp.json["instanceActions"][4]["action"] == "create"
    assert resp.json["instanceActions"][4]["request_id"] == CREATE_REQUEST
    assert resp.json["instanceActions"][4]["instance_uuid"] == server_uuid("ACTIONS")
    assert resp.json["instanceActions"][4]["message"] == "Error"
    assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$",
                     str(resp.json["instanceActions"][4]["start_time"]))
    assert len(resp.json["instanceActions"][4]) == 7


def test_the_owner_sees_no_events_below_2_51(client):
    """The owner sees no events below 2.51."""
    resp = client.get(
        instance_actions_url(server_uuid("ACTIONS"), CREATE_REQUEST),
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceAction"]["action"] == "create"
    assert len(resp.json["instanceAction"]) == 7


def test_an_admin_sees_events_with_traceback(client):
    """An admin sees events with traceback."""
    resp = client.get(
        instance_actions_url(server_uuid("ACTIONS"), CREATE_REQUEST),
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text
    assert len(resp.json["instanceAction"]["events"]) == 2
    assert resp.json["instanceAction"]["events"][0]["event"] == "compute_build_and_run_instance"
    assert resp.json["instanceAction"]["events"][0]["result"] == "Success"
    assert resp.json["instanceAction"]["events"][0]["traceback"] is None
    assert len(resp.json["instanceAction"]["events"][0]) == 5
    assert resp.json["instanceAction"]["events"][1]["result"] == "Error"
    assert resp.json["instanceAction"]["events"][1]["traceback"] == (
        "Traceback (most recent call last): boom")


def test_from_2_51_the_owner_sees_events_but_no_traceback(client):
    """From 2.51 the owner sees events but no traceback."""
    resp = client.get(
        instance_actions_url(server_uuid("ACTIONS"), CREATE_REQUEST),
        headers={**HEADERS, "x-openstack-nova-api-version": "2.51"})
    assert resp.status_code == 200, resp.text
    assert len(resp.json["instanceAction"]["events"]) == 2
    assert resp.json["instanceAction"]["events"][1]["event"] == "compute_attach_volume"
    assert len(resp.json["instanceAction"]["events"][1]) == 4


def test_and_shown_from_2_21(client):
    """And shown from 2.21."""
    resp = client.get(
        instance_actions_url(server_uuid("DELETED")),
        headers={**HEADERS, "x-openstack-nova-api-version": "2.21"})
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "delete"


@pytest.mark.parametrize("url, status, message", [
    pytest.param(instance_actions_url(server_uuid("ACTIONS"), query="?limit=1"), 200, None,
                 id="pagination_parameters_are_ignored_below_2_58"),
    pytest.param(instance_actions_url(server_uuid("ACTIONS"), "req-nope"), 404,
                 "Action req-nope not found", id="an_unknown_request_id_is_a_404"),
    pytest.param(instance_actions_url("5e4e0000-0000-4000-8000-0000000000ff"), 404,
                 "Instance 5e4e0000-0000-4000-8000-0000000000ff could not be found.",
                 id="an_unknown_server_is_a_404"),
    pytest.param(instance_actions_url(server_uuid("OTHER_PROJECT")), 404, None,
                 id="another_project_s_server_is_a_404"),
    pytest.param(instance_actions_url(server_uuid("DELETED")), 404, None,
                 id="a_deleted_server_s_actions_are_hidden_below_2_21"),
])
def test_status(client, url, status, message):
    resp = client.get(url, headers=HEADERS)
    assert_fault(resp, status, message)
    if status == 200:
        assert len(resp.json["instanceActions"]) == 5
