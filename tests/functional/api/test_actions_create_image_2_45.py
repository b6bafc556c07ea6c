"""createImage from 2.45: {"image_id": ...} in the body, no Location.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import action_url, assert_fault, cannot, json_headers
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.45", "demo:demo-project")


def create_image(client, name, image_name):
    return client.post(action_url(server_uuid(name)), json={"createImage": {"name": image_name}},
                       headers=HEADERS)


def test_snapshot_an_active_volume_backed_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # snapshot an active volume-backed server
    resp = create_image(client, "ACTIVE", "snap-245")
    assert resp.status_code == 202, resp.text
    assert "location" not in resp.headers
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["image_id"]))

    # paused and suspended servers can be snapshotted
    resp = create_image(client, "PAUSED", "paused")
    assert resp.status_code == 202, resp.text
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["image_id"]))

    # suspended too
    assert_fault(create_image(client, "SUSPENDED", "suspended"), 202)

    # the snapshot is recorded as the newest action
    resp = client.get(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/os-instance-actions",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "createImage"

    # an image-backed server is refused with a clear 400
    assert_fault(create_image(client, "IMAGE_BACKED", "x"), 400,
                 re.compile("does not boot from a volume"))

    # a shelved server is refused
    assert_fault(create_image(client, "SHELVED", "x"), 409,
                 cannot("createImage", server_uuid("SHELVED"), "vm_state shelved"))

    # reboot answers no body at 2.45 either
    resp = client.post(action_url(server_uuid("STOPPED")), json={"reboot": {"type": "HARD"}},
                       headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"
