"""POST at 2.49: a device tag is accepted (shape-checked) but the 200 body is
still the 2.1 one; delete_on_termination is not known yet; shelved servers
(2.20) may attach, shelved-offloaded ones without a tag.
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
    "openstack-api-version": "compute 2.49",
}


@pytest.fixture
def client():
    with fixtures.open_world(world) as (app, _deps):
        yield app.test_client()


def test_a_tag_longer_than_60_characters(client):
    """A tag longer than 60 characters."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={
            "volumeAttachment": {
                "volumeId": VOLUME["FREE"],
                "tag": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text


def test_an_empty_tag(client):
    """An empty tag."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "tag": ""}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text


def test_a_tag_with_a_slash(client):
    """A tag with a slash."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "tag": "a/b"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text


def test_a_tag_with_a_comma(client):
    """A tag with a comma."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "tag": "a,b"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text


def test_delete_on_termination_only_from_2_79(client):
    """Delete_on_termination only from 2.79."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "delete_on_termination": True}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text


def test_a_tag_on_a_shelved_offloaded_server(client):
    """A tag on a shelved-offloaded server."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['SHELVED_OFFLOADED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "tag": "t"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Tagged volume attachment is not supported for shelved-offloaded instances.")


def test_the_conductor_cannot_tag_on_this_host(client):
    """The conductor cannot tag on this host."""
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["NO_TAGS"], "tag": "t"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Tagged volume attachment is not supported for this instance's compute host.")


def test_attach_with_a_tag_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # attach with a tag
    resp = client.post(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"], "tag": "my-disk"}},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"] == {
                                                "id": VOLUME["FREE"],
                                                "serverId": SERVER["ACTIVE"],
                                                "volumeId": VOLUME["FREE"],
                                                "device": "/dev/vdf",
                                            }

    # the tag is shown from 2.70
    resp = client.get(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['FREE']}",
        headers={**HEADERS, "openstack-api-version": "compute 2.70"})
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["tag"] == "my-disk"

    # a shelved server from 2.20
    resp = client.post(
        f"/v2.1/servers/{SERVER['SHELVED']}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE2"]}},
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdc"

