"""POST at 2.60: multiattach volumes may be attached to several servers, never
twice to one, and not to a shelved-offloaded server.
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
    "openstack-api-version": "compute 2.60",
}


@pytest.fixture
def client():
    with fixtures.open_world(world) as (app, _deps):
        yield app.test_client()


def test_a_multiattach_volume_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # a multiattach volume
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["MULTI"]

    # the same multiattach volume on a second server
    resp = client.post(
        f"/v2.1/servers/{SERVER['SECOND']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdd"

    # and again on the first one
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['MULTI']} is already attached to instances: {SERVER['ACTIVE']}")

    # a single-attach volume stays single
    resp = client.post(
        f"/v2.1/servers/{SERVER['SECOND']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["DATA"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['DATA']} is already attached to instances: {SERVER['ACTIVE']}")

    # multiattach on a shelved-offloaded server
    resp = client.post(
        f"/v2.1/servers/{SERVER['SHELVED_OFFLOADED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Attaching multiattach volumes is not supported for shelved-offloaded instances.")

    # both attachments are listed at 2.89
    resp = client.get(
        f"/v2.1/servers/{SERVER['SECOND']}/os-volume_attachments",
        headers={**HEADERS, "openstack-api-version": "compute 2.89"})
    assert resp.status_code == 200, resp.text
    assert [item["volumeId"] for item in resp.json["volumeAttachments"]] == [
                                                                                VOLUME["SHARED"],
                                                                                VOLUME["DETACHING"],
                                                                                VOLUME["MULTI"],
                                                                            ]

