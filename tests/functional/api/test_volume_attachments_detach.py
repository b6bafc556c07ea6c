"""DELETE in the order of doc/source/contributor/contract.rst §3.4: server 404, policy, shelved
below 2.20 409,
Cinder volume 404, attachment 404, root disk 400, state/lock 409, compute
host down 409, Cinder begin_detaching 400; then 202 with no body.
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
    resp = client.delete(
        f"/v2.1/servers/a77a0000-0000-4000-8000-0000000000ff/os-volume_attachments/{VOLUME['UNKNOWN']}",
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        "Instance a77a0000-0000-4000-8000-0000000000ff could not be found.")


def test_another_project_s_server(client):
    """Another project's server."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['OTHER_PROJECT']}/os-volume_attachments/{VOLUME['DATA']}",
        headers=HEADERS)
    assert resp.status_code == 404, resp.text


def test_shelved_below_2_20_before_the_volume_lookup(client):
    """Shelved below 2.20 before the volume lookup."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['SHELVED']}/os-volume_attachments/{VOLUME['UNKNOWN']}",
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'detach_volume' instance {SERVER['SHELVED']} while it is in vm_state shelved")


def test_unknown_volume_before_the_lock(client):
    """Unknown volume before the lock."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments/{VOLUME['UNKNOWN']}",
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        f"Volume {VOLUME['UNKNOWN']} could not be found.")


def test_a_volume_of_another_server_before_the_lock(client):
    """A volume of another server before the lock."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments/{VOLUME['DATA']}",
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        f"Instance {SERVER['LOCKED']} is not attached to volume {VOLUME['DATA']}")


def test_the_root_volume(client):
    """The root volume."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['ROOT']}",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Cannot detach a root device volume"


def test_locked_server(client):
    """Locked server."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['LOCKED']}/os-volume_attachments/{VOLUME['LOCKED_DATA']}",
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == f"Instance {SERVER['LOCKED']} is locked"


def test_rebooting_server(client):
    """Rebooting server."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['REBOOTING']}/os-volume_attachments/{VOLUME['REBOOTING_DATA']}",
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'detach_volume' instance {SERVER['REBOOTING']} while it is in task_state "
        "rebooting")


def test_compute_host_down(client):
    """Compute host down."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['HOST_DOWN']}/os-volume_attachments/{VOLUME['DOWN_DATA']}",
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Compute host compute-down of instance {SERVER['HOST_DOWN']} is not up; retry when the "
        "service is back.")


def test_cinder_refuses_begin_detaching(client):
    """Cinder refuses begin_detaching."""
    resp = client.delete(
        f"/v2.1/servers/{SERVER['SECOND']}/os-volume_attachments/{VOLUME['DETACHING']}",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("Unable to detach volume", str(resp.json["badRequest"]["message"]))


def test_detach_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # detach
    resp = client.delete(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"
    assert resp.headers["openstack-api-version"] == "compute 2.1"

    # the detach action is recorded
    resp = client.get(f"/v2.1/servers/{SERVER['ACTIVE']}/os-instance-actions", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "detach_volume"

    # a second detach while detaching
    resp = client.delete(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments/{VOLUME['DATA']}",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # a stopped server
    resp = client.delete(
        f"/v2.1/servers/{SERVER['STOPPED']}/os-volume_attachments/{VOLUME['STOPPED_DATA']}",
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # a shelved server from 2.20
    resp = client.delete(
        f"/v2.1/servers/{SERVER['SHELVED']}/os-volume_attachments/{VOLUME['SHELVED_DATA']}",
        headers={**HEADERS, "openstack-api-version": "compute 2.20"})
    assert resp.status_code == 202, resp.text

