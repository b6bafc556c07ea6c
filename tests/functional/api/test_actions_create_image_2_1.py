"""createImage of a volume-backed server below 2.45: 202, no body, Location header.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "demo:demo-project",
    "x-openstack-nova-api-version": "2.1",
}


def test_snapshot_a_stopped_volume_backed_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # snapshot a stopped volume-backed server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"createImage": {"name": "nightly", "metadata": {"purpose": "backup"}}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert re.search("^http://glance.example.test:9292/images/[0-9a-f-]{36}$",
                     resp.headers["location"])
    assert resp.headers["content-length"] == "0"

    # the action is recorded as createImage with its api event
    resp = client.get(
        f"/v2.1/servers/{server_uuid('STOPPED')}/os-instance-actions",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "createImage"

    # a locked server can still be snapshotted (no lock check)
    resp = client.post(
        f"/v2.1/servers/{server_uuid('LOCKED')}/action",
        json={"createImage": {"name": "locked-snap"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # a server in error is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ERROR')}/action",
        json={"createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'createImage' instance {server_uuid('ERROR')} while it is in vm_state error")

    # a server with a task is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('REBOOTING')}/action",
        json={"createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'createImage' instance {server_uuid('REBOOTING')} while it is in task_state "
        "rebooting")

    # a server that never ran is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('NOT_LAUNCHED')}/action",
        json={"createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'createImage' instance {server_uuid('NOT_LAUNCHED')} while it is in launched_at "
        "None")

    # more volumes than the snapshot quota allows is a 403 up front
    resp = client.post(
        f"/v2.1/servers/{server_uuid('OVER_QUOTA')}/action",
        json={"createImage": {"name": "too-many"}},
        headers=HEADERS)
    assert resp.status_code == 403, resp.text
    assert resp.json["forbidden"]["message"] == "Quota exceeded for resources: snapshots"

    # the refused snapshot left no action behind
    resp = client.get(
        f"/v2.1/servers/{server_uuid('OVER_QUOTA')}/os-instance-actions",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert len(resp.json["instanceActions"]) == 0

    # name is required
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"createImage": {"metadata": {}}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # metadata values must be strings
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"createImage": {"name": "x", "metadata": {"n": 1}}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # another project's server is not found
    resp = client.post(
        f"/v2.1/servers/{server_uuid('OTHER_PROJECT')}/action",
        json={"createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

