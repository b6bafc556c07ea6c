"""os-assisted-volume-snapshots (doc/source/contributor/contract.rst §8): what Cinder's remotefs
drivers call. service_or_admin; every refusal is a 400, including a
volume attached to more than one server (multiattach).
"""

import json
import re
from urllib.parse import urlencode

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import ADMIN_TOKEN, assert_fault, at_version, json_headers

VOLUME = world.VOLUME
HEADERS = json_headers("2.1", ADMIN_TOKEN)


URL = "/v2.1/os-assisted-volume-snapshots"
SNAP1 = "5aa50000-0000-4000-8000-000000000001"
SNAP2 = "5aa50000-0000-4000-8000-000000000002"
ALICE_PROJECT = "7e57000000000000000000000000a11c"


def create(client, volume, headers=HEADERS, url=URL, **create_info):
    body = {"snapshot": {"volume_id": VOLUME[volume], "create_info": create_info}}
    return client.post(url, json=body, headers=headers)


def delete(client, query="", headers=HEADERS, **delete_info):
    """DELETE of SNAP1; ``delete_info`` (volume named) goes in the query as JSON."""
    if delete_info:
        delete_info["volume_id"] = VOLUME[delete_info["volume_id"]]
        query = "?" + urlencode({"delete_info": json.dumps(delete_info)}) + query
    return client.delete(f"{URL}/{SNAP1}{query}", headers=headers)


def test_a_project_member_may_not(client):
    """A project member may not."""
    resp = create(client, "DATA", {**HEADERS, "x-auth-token": f"alice:{ALICE_PROJECT}"},
                  snapshot_id=SNAP1, type="qcow2", new_file="volume-2.snap1")
    assert resp.status_code == 403, resp.text


# (step, volume, create_info, expected message: text or pattern; None: code 400 only)
REFUSED_CREATES = [
    ("new_file is required", "DATA", {"snapshot_id": SNAP2, "type": "qcow2"},
     re.compile("new_file")),
    ("only qcow2", "DATA", {"snapshot_id": SNAP2, "type": "raw", "new_file": "f"}, None),
    ("nothing else in create_info", "DATA",
     {"snapshot_id": "s", "type": "qcow2", "new_file": "f", "merge": True}, None),
    ("a multiattach volume on two servers is refused", "SHARED",
     {"snapshot_id": "s", "type": "qcow2", "new_file": "f"},
     f"Block Device Mapping {VOLUME['SHARED']} is a multi-attach volume and is not valid for "
     "this operation."),
    ("a volume without a BDM is refused", "FREE",
     {"snapshot_id": "s", "type": "qcow2", "new_file": "f"},
     f"No volume Block Device Mapping with id {VOLUME['FREE']}."),
    ("a server busy with a task is refused with 400 (not 409)", "REBOOTING_DATA",
     {"snapshot_id": "s", "type": "qcow2", "new_file": "f"}, re.compile("task_state rebooting")),
]


def test_create_for_a_volume_on_one_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # create for a volume on one server
    resp = create(client, "DATA", snapshot_id=SNAP1, type="qcow2", new_file="volume-2.snap1",
                  id="5aa50000-0000-4000-8000-00000000000a")
    assert resp.status_code == 200, resp.text
    assert resp.json["snapshot"]["id"] == "5aa50000-0000-4000-8000-00000000000a"
    assert resp.json["snapshot"]["volumeId"] == VOLUME["DATA"]

    # without create_info.id the id is null
    resp = create(client, "DATA", snapshot_id=SNAP2, type="qcow2", new_file="volume-2.snap2")
    assert resp.status_code == 200, resp.text
    assert resp.json["snapshot"]["id"] is None

    for step, volume, create_info, message in REFUSED_CREATES:
        resp = create(client, volume, **create_info)
        assert_fault(resp, 400, message, step=step)
        if message is None:
            assert resp.json["badRequest"]["code"] == 400, step

    # delete
    resp = delete(client, volume_id="DATA", type="qcow2", file_to_merge="volume-2.snap1",
                  merge_target_file=None)
    assert resp.status_code == 204, resp.text

    # delete without delete_info
    assert_fault(delete(client), 400, "delete_info must be a JSON object with volume_id")

    # delete with delete_info that is not JSON
    assert_fault(delete(client, "?delete_info=%7Bvolume_id"), 400,
                 re.compile("delete_info is not JSON"))

    # delete for a multiattach volume
    assert_fault(delete(client, volume_id="SHARED"), 400, re.compile("is a multi-attach volume"))

    # an offline merge on a stopped server is refused
    resp = delete(client, volume_id="STOPPED_DATA", file_to_merge="a", merge_target_file="b")
    assert_fault(resp, 400, re.compile("vm_state stopped"))

    # a pull on a stopped server is cast
    assert_fault(delete(client, volume_id="STOPPED_DATA", file_to_merge="a"), 204)

    # before 2.75 an unknown query parameter is ignored
    assert_fault(delete(client, "&other=x", volume_id="DATA"), 204)

    # from 2.75 it is a 400
    resp = delete(client, "&other=x", at_version(HEADERS, "2.75"), volume_id="DATA")
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    # with a project id in the path too
    resp = create(client, "DATA", {**HEADERS, "x-auth-token": f"admin:{ALICE_PROJECT}"},
                  f"/v2.1/{ALICE_PROJECT}/os-assisted-volume-snapshots",
                  snapshot_id="s3", type="qcow2", new_file="f3")
    assert resp.status_code == 200, resp.text
