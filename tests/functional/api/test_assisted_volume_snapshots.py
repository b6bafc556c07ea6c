"""os-assisted-volume-snapshots (doc/source/contributor/contract.rst §8): what Cinder's remotefs
drivers call. service_or_admin; every refusal is a 400, including a
volume attached to more than one server (multiattach).
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import VolumeAttachmentsWorld as world

VOLUME = world.VOLUME
HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "admin:admin-project",
    "openstack-api-version": "compute 2.1",
}


@pytest.fixture
def client():
    with fixtures.open_world(world) as (app, _deps):
        yield app.test_client()


def test_a_project_member_may_not(client):
    """A project member may not."""
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {
                    "snapshot_id": "5aa50000-0000-4000-8000-000000000001",
                    "type": "qcow2",
                    "new_file": "volume-2.snap1",
                },
            },
        },
        headers={**HEADERS, "x-auth-token": "alice:7e57000000000000000000000000a11c"})
    assert resp.status_code == 403, resp.text


def test_create_for_a_volume_on_one_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # create for a volume on one server
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {
                    "snapshot_id": "5aa50000-0000-4000-8000-000000000001",
                    "type": "qcow2",
                    "new_file": "volume-2.snap1",
                    "id": "5aa50000-0000-4000-8000-00000000000a",
                },
            },
        },
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["snapshot"]["id"] == "5aa50000-0000-4000-8000-00000000000a"
    assert resp.json["snapshot"]["volumeId"] == VOLUME["DATA"]

    # without create_info.id the id is null
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {
                    "snapshot_id": "5aa50000-0000-4000-8000-000000000002",
                    "type": "qcow2",
                    "new_file": "volume-2.snap2",
                },
            },
        },
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["snapshot"]["id"] is None

    # new_file is required
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {
                    "snapshot_id": "5aa50000-0000-4000-8000-000000000002",
                    "type": "qcow2",
                },
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("new_file", str(resp.json["badRequest"]["message"]))

    # only qcow2
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {
                    "snapshot_id": "5aa50000-0000-4000-8000-000000000002",
                    "type": "raw",
                    "new_file": "f",
                },
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    # nothing else in create_info
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {
                    "snapshot_id": "s",
                    "type": "qcow2",
                    "new_file": "f",
                    "merge": True,
                },
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    # a multiattach volume on two servers is refused
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["SHARED"],
                "create_info": {"snapshot_id": "s", "type": "qcow2", "new_file": "f"},
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"Block Device Mapping {VOLUME['SHARED']} is a multi-attach volume and is not valid for "
        "this operation.")

    # a volume without a BDM is refused
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["FREE"],
                "create_info": {"snapshot_id": "s", "type": "qcow2", "new_file": "f"},
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"No volume Block Device Mapping with id {VOLUME['FREE']}.")

    # a server busy with a task is refused with 400 (not 409)
    resp = client.post(
        "/v2.1/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["REBOOTING_DATA"],
                "create_info": {"snapshot_id": "s", "type": "qcow2", "new_file": "f"},
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("task_state rebooting", str(resp.json["badRequest"]["message"]))

    # delete
    resp = client.delete(
        f"/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7B%22volume_id%22%3A+%22{VOLUME['DATA']}%22%2C+%22type%22%3A+%22qcow2%22%2C+%22file_to_merge%22%3A+%22volume-2.snap1%22%2C+%22merge_target_file%22%3A+null%7D",
        headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # delete without delete_info
    resp = client.delete(
        "/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "delete_info must be a JSON object with volume_id"

    # delete with delete_info that is not JSON
    resp = client.delete(
        "/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7Bvolume_id",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("delete_info is not JSON", str(resp.json["badRequest"]["message"]))

    # delete for a multiattach volume
    resp = client.delete(
        f"/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7B%22volume_id%22%3A+%22{VOLUME['SHARED']}%22%7D",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("is a multi-attach volume", str(resp.json["badRequest"]["message"]))

    # an offline merge on a stopped server is refused
    resp = client.delete(
        f"/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7B%22volume_id%22%3A+%22{VOLUME['STOPPED_DATA']}%22%2C+%22file_to_merge%22%3A+%22a%22%2C+%22merge_target_file%22%3A+%22b%22%7D",
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("vm_state stopped", str(resp.json["badRequest"]["message"]))

    # a pull on a stopped server is cast
    resp = client.delete(
        f"/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7B%22volume_id%22%3A+%22{VOLUME['STOPPED_DATA']}%22%2C+%22file_to_merge%22%3A+%22a%22%7D",
        headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # before 2.75 an unknown query parameter is ignored
    resp = client.delete(
        f"/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7B%22volume_id%22%3A+%22{VOLUME['DATA']}%22%7D&other=x",
        headers=HEADERS)
    assert resp.status_code == 204, resp.text

    # from 2.75 it is a 400
    resp = client.delete(
        f"/v2.1/os-assisted-volume-snapshots/5aa50000-0000-4000-8000-000000000001?delete_info=%7B%22volume_id%22%3A+%22{VOLUME['DATA']}%22%7D&other=x",
        headers={**HEADERS, "openstack-api-version": "compute 2.75"})
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    # with a project id in the path too
    resp = client.post(
        "/v2.1/7e57000000000000000000000000a11c/os-assisted-volume-snapshots",
        json={
            "snapshot": {
                "volume_id": VOLUME["DATA"],
                "create_info": {"snapshot_id": "s3", "type": "qcow2", "new_file": "f3"},
            },
        },
        headers={**HEADERS, "x-auth-token": "admin:7e57000000000000000000000000a11c"})
    assert resp.status_code == 200, resp.text

