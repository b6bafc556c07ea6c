"""createImage of a volume-backed server below 2.45: 202, no body, Location header.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import action_url, assert_fault, cannot, json_headers
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.1", "demo:demo-project", legacy=True)


def create_image(client, server, **create_image):
    return client.post(action_url(server_uuid(server)), json={"createImage": create_image},
                       headers=HEADERS)


def actions(client, server):
    resp = client.get(f"/v2.1/servers/{server_uuid(server)}/os-instance-actions", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    return resp.json["instanceActions"]


def test_snapshot_a_stopped_volume_backed_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # snapshot a stopped volume-backed server
    resp = create_image(client, "STOPPED", name="nightly", metadata={"purpose": "backup"})
    assert resp.status_code == 202, resp.text
    assert re.search("^http://glance.example.test:9292/images/[0-9a-f-]{36}$",
                     resp.headers["location"])
    assert resp.headers["content-length"] == "0"

    # the action is recorded as createImage with its api event
    assert actions(client, "STOPPED")[0]["action"] == "createImage"

    # a locked server can still be snapshotted (no lock check)
    assert_fault(create_image(client, "LOCKED", name="locked-snap"), 202)

    for step, server, state in [
        ("a server in error is refused", "ERROR", "vm_state error"),
        ("a server with a task is refused", "REBOOTING", "task_state rebooting"),
        ("a server that never ran is refused", "NOT_LAUNCHED", "launched_at None"),
    ]:
        assert_fault(create_image(client, server, name="x"), 409,
                     cannot("createImage", server_uuid(server), state), step=step)

    # more volumes than the snapshot quota allows is a 403 up front
    assert_fault(create_image(client, "OVER_QUOTA", name="too-many"), 403,
                 "Quota exceeded for resources: snapshots")

    # the refused snapshot left no action behind
    assert len(actions(client, "OVER_QUOTA")) == 0

    # name is required
    assert_fault(create_image(client, "STOPPED", metadata={}), 400)

    # metadata values must be strings
    assert_fault(create_image(client, "STOPPED", name="x", metadata={"n": 1}), 400)

    # another project's server is not found
    assert_fault(create_image(client, "OTHER_PROJECT", name="x"), 404)
