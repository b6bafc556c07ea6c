"""POST os-volume_attachments at 2.1: the synchronous checks in Nova's order
(server 404, volume 404, lock/state 409, device 400, already attached 400,
multiattach below 2.60 400), then a 200 with the reserved device.
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import VolumeAttachmentsWorld as world

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "alice:7e57000000000000000000000000a11c",
    "openstack-api-version": "compute 2.1",
}


@pytest.fixture
def client():
    with fixtures.open_world(world) as (app, _deps):
        yield app.test_client()


def test_unknown_server(client):
    """Unknown server."""
    resp = client.post(
        "/v2.1/servers/a77a0000-0000-4000-8000-0000000000ff/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["UNKNOWN"]}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        "Instance a77a0000-0000-4000-8000-0000000000ff could not be found.")


def test_another_project_s_server(client):
    """Another project's server."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['OTHER_PROJECT']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text


def test_unknown_volume_before_the_lock(client):
    """Unknown volume before the lock."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["UNKNOWN"]}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        f"Volume {VOLUME['UNKNOWN']} could not be found.")


def test_locked_server(client):
    """Locked server."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == f"Instance {SERVER['LOCKED']} is locked"


def test_an_admin_may_attach_to_a_locked_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # an admin may attach to a locked server
    resp = client.post(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE2"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdc"

    # building server
    resp = client.post(
        f"/v2.1/servers/{SERVER['BUILDING']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {SERVER['BUILDING']} while it is in vm_state building")

    # rebooting server
    resp = client.post(
        f"/v2.1/servers/{SERVER['REBOOTING']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {SERVER['REBOOTING']} while it is in task_state "
        "rebooting")

    # error server
    resp = client.post(
        f"/v2.1/servers/{SERVER['ERROR']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {SERVER['ERROR']} while it is in vm_state error")

    # suspended server
    resp = client.post(
        f"/v2.1/servers/{SERVER['SUSPENDED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text

    # never launched
    resp = client.post(
        f"/v2.1/servers/{SERVER['NOT_LAUNCHED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {SERVER['NOT_LAUNCHED']} while it is in launched_at "
        "None")

    # shelved needs 2.20
    resp = client.post(
        f"/v2.1/servers/{SERVER['SHELVED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {SERVER['SHELVED']} while it is in vm_state shelved")

    # shelved offloaded needs 2.20
    resp = client.post(
        f"/v2.1/servers/{SERVER['SHELVED_OFFLOADED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'attach_volume' instance {SERVER['SHELVED_OFFLOADED']} while it is in vm_state "
        "shelved_offloaded")

    # a device that is not a device name
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "device": "vdb"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search(r"Invalid input for field\/attribute volumeAttachment\/device",
                     str(resp.json["badRequest"]["message"]))

    # volumeId must be a uuid
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": "not-a-uuid"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # volumeId is required
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"device": "/dev/vdb"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # tag only from 2.49
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "tag": "t"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("Additional properties are not allowed",
                     str(resp.json["badRequest"]["message"]))

    # no other top-level key
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}, "extra": 1},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # a volume attached to another server
    resp = client.post(
        f"/v2.1/servers/{SERVER['SECOND']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['DATA']} is already attached to instances: {SERVER['ACTIVE']}")

    # a volume attached to this server
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['DATA']} is already attached to instances: {SERVER['ACTIVE']}")

    # a multiattach volume already on this server
    resp = client.post(
        f"/v2.1/servers/{SERVER['SECOND']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["SHARED"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['SHARED']} is already attached to instances: {SERVER['SECOND']}")

    # a multiattach volume below 2.60
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Multiattach volumes are only supported starting with compute API version 2.60.")

    # attach
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "device": "/dev/vdb"}},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers["openstack-api-version"] == "compute 2.1"
    assert resp.json["volumeAttachment"] == {
                                                "id": VOLUME["FREE"],
                                                "serverId": SERVER["ACTIVE"],
                                                "volumeId": VOLUME["FREE"],
                                                "device": "/dev/vdf",
                                            }

    # the new attachment is listed with its device
    resp = client.get(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['FREE']}",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdf"

    # attaching it again
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['FREE']} is already attached to instances: {SERVER['ACTIVE']}")

    # a stopped server
    resp = client.post(
        f"/v2.1/servers/{SERVER['STOPPED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["TOO_MANY"], "device": None}},
        headers=HEADERS)
    assert resp.status_code == 403, resp.text
    assert resp.json["forbidden"]["message"] == (
        "The maximum allowed number of disk devices (2) to attach to a single instance has been "
        "exceeded.")

    # the conductor finds the device in use
    resp = client.post(
        f"/v2.1/servers/{SERVER['PAUSED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["DEVICE_BUSY"]}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        "The supplied device path (/dev/vdz) is in use.")

