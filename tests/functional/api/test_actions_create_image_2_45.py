"""createImage from 2.45: {"image_id": ...} in the body, no Location.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import json_headers
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.45", "demo:demo-project")


def test_snapshot_an_active_volume_backed_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # snapshot an active volume-backed server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/action",
        json={"createImage": {"name": "snap-245"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert "location" not in resp.headers
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["image_id"]))

    # paused and suspended servers can be snapshotted
    resp = client.post(
        f"/v2.1/servers/{server_uuid('PAUSED')}/action",
        json={"createImage": {"name": "paused"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["image_id"]))

    # suspended too
    resp = client.post(
        f"/v2.1/servers/{server_uuid('SUSPENDED')}/action",
        json={"createImage": {"name": "suspended"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # the snapshot is recorded as the newest action
    resp = client.get(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/os-instance-actions",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "createImage"

    # an image-backed server is refused with a clear 400
    resp = client.post(
        f"/v2.1/servers/{server_uuid('IMAGE_BACKED')}/action",
        json={"createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("does not boot from a volume", str(resp.json["badRequest"]["message"]))

    # a shelved server is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('SHELVED')}/action",
        json={"createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'createImage' instance {server_uuid('SHELVED')} while it is in vm_state shelved")

    # reboot answers no body at 2.45 either
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

