"""PUT at 2.85 (and the swap-only form below it): the same volumeId updates
delete_on_termination (member), echoed fields must not change; another
volumeId is a swap (service or admin), only of a volume Cinder is migrating
(409 otherwise). A swap that is accepted: test_volume_attachments.py.
"""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import VolumeAttachmentsWorld as world

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "alice:7e57000000000000000000000000a11c",
    "openstack-api-version": "compute 2.85",
}


@pytest.fixture
def client():
    with fixtures.open_world(world) as (app, _deps):
        yield app.test_client()


def test_update_delete_on_termination_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # update delete_on_termination
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={
            "volumeAttachment": {
                "volumeId": VOLUME["DATA"],
                "id": VOLUME["DATA"],
                "serverId": SERVER["ACTIVE"],
                "device": "/dev/vdb",
                "tag": "data",
                "delete_on_termination": True,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

    # the flag is shown
    resp = client.get(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["delete_on_termination"] is True

    # on a locked server too (no state gate)
    resp = client.put(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments/{VOLUME['LOCKED_DATA']}",
        json={
            "volumeAttachment": {"volumeId": VOLUME["LOCKED_DATA"], "delete_on_termination": "on"},
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # device is not mutable
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"], "device": "/dev/vdq"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "The device property is not mutable"

    # tag is not mutable
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"], "tag": "other"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "The tag property is not mutable"

    # serverId is not mutable
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"], "serverId": SERVER["SECOND"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "The serverId property is not mutable"

    # a volume that is not attached
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['FREE']}",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "delete_on_termination": True}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        f"Instance {SERVER['ACTIVE']} is not attached to volume {VOLUME['FREE']}")

    # unknown keys
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"], "size": 3}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # a swap needs the swap policy
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 403, resp.text
    assert resp.json["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-volumes-attachments:swap to be performed.")

    # swap of an unknown old volume
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/b01e0000-0000-4000-8000-0000000000fe",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        "Volume b01e0000-0000-4000-8000-0000000000fe could not be found.")

    # swap to an unknown new volume
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["UNKNOWN"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == f"Volume {VOLUME['UNKNOWN']} could not be found."

    # swap of a volume the server does not have
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['FREE2']}",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 404, resp.text

    # swap on a stopped server
    resp = client.put(
        f"/v2.1/servers/{SERVER['STOPPED']}/os-volume_attachments/{VOLUME['STOPPED_DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'swap_volume' instance {SERVER['STOPPED']} while it is in vm_state stopped")

    # swap of a multiattach volume with two read/write attachments
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['SHARED']}",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Swapping multi-attach volumes with more than one read/write attachment is not supported.")

    # swap of a volume Cinder is not migrating
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Volume {VOLUME['DATA']} is not being migrated: the volume of an attachment is only "
        "swapped while Cinder migrates or retypes it.")

    # swap to a volume that is attached already
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['MIGRATING']}",
        json={"volumeAttachment": {"volumeId": VOLUME["LEGACY"]}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Invalid volume for swap: New volume must be detached in order to swap.")

    # below 2.85 every PUT is a swap
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"]}},
        headers={**HEADERS, "openstack-api-version": "compute 2.84"})
    assert resp.status_code == 403, resp.text

    # below 2.85 only volumeId is accepted
    resp = client.put(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"], "delete_on_termination": True}},
        headers={**HEADERS, "openstack-api-version": "compute 2.84",
                     "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 400, resp.text

