"""os-assisted-volume-snapshots through API, conductor and compute (fake://).

Plays Cinder's remotefs driver: it creates the overlay file next to the
volume's file, asks for the snapshot, and waits for the snapshot to go
``creating``/90% (or ``error``); then asks for the merge and waits for
``deleting``/90%. The fake libvirt switches the disk's source file the way
an external disk-only snapshot and an active block commit do.
"""

import json
import os
import urllib.parse

import pytest
from oslo_serialization import jsonutils

from volumesvc.objects import block_device as bdm_obj

ADMIN = "admin:admin"


@pytest.fixture
def attached(stack):
    """(server, volume id, the volume's file) with the volume attached at 2.60."""
    (server,) = stack.boot_active()
    volume_id = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server, volume_id)
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use",
               what="attached")
    return server, volume_id, _source(stack, server, volume_id)


def _disk(stack, server, volume_id):
    driver = stack.computes["fn-compute"].manager.driver
    return driver.get_volume_disk_info({"uuid": server}, volume_id)


def _source(stack, server, volume_id):
    return os.path.realpath(_disk(stack, server, volume_id).source)


def _bdm_path(stack, server, volume_id):
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), volume_id,
                                             server)
    return jsonutils.loads(bdm.connection_info)["data"]["device_path"]


def _snapshot_status(stack, snapshot_id, status, progress=None):
    def check():
        snap = stack.cinder.snapshots[snapshot_id]
        return snap["status"] == status and snap.get("progress") == progress
    stack.wait(check, what=f"snapshot {snapshot_id} {status} {progress}")


def _create(stack, volume_id, snapshot_id, new_file, status=200):
    return stack.api("POST", "/os-assisted-volume-snapshots", {"snapshot": {
        "volume_id": volume_id, "create_info": {
            "snapshot_id": snapshot_id, "type": "qcow2", "new_file": new_file,
            "id": snapshot_id}}}, token=ADMIN, status=status)[1]


def test_create_switches_the_disk_to_the_overlay_and_delete_merges_it_back(stack, attached):
    server, volume_id, base = attached
    snapshot_id = stack.cinder.create_snapshot_force(stack.context(), volume_id)["id"]
    overlay = base + ".snap1"
    open(overlay, "wb").close()  # the remotefs driver makes the qcow2 file itself

    body = _create(stack, volume_id, snapshot_id, os.path.basename(overlay))
    assert body == {"snapshot": {"id": snapshot_id, "volumeId": volume_id}}
    _snapshot_status(stack, snapshot_id, "creating", "90%")
    assert _source(stack, server, volume_id) == overlay
    assert _bdm_path(stack, server, volume_id) == overlay  # a hard reboot opens it

    delete_info = json.dumps({"volume_id": volume_id, "type": "qcow2",
                              "file_to_merge": os.path.basename(overlay),
                              "merge_target_file": os.path.basename(base)})
    stack.api("DELETE", f"/os-assisted-volume-snapshots/{snapshot_id}?delete_info="
              f"{urllib.parse.quote(delete_info)}", token=ADMIN, status=204)
    _snapshot_status(stack, snapshot_id, "deleting", "90%")
    assert _source(stack, server, volume_id) == base
    assert _bdm_path(stack, server, volume_id) == base


def test_a_failed_snapshot_is_reported_to_cinder_as_error(stack, attached):
    server, volume_id, base = attached
    snapshot_id = stack.cinder.create_snapshot_force(stack.context(), volume_id)["id"]
    _create(stack, volume_id, snapshot_id, "no-such-overlay")  # the file was never made
    _snapshot_status(stack, snapshot_id, "error")
    assert _source(stack, server, volume_id) == base


def test_a_multiattach_volume_on_two_servers_is_refused(stack):
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    servers = stack.boot_active(2)
    volume_id = stack.cinder.create(stack.context(), 1, "shared", "",
                                    volume_type="multi")["id"]
    for server in servers:
        stack.attach_volume(server, volume_id)
    snapshot_id = stack.cinder.create_snapshot_force(stack.context(), volume_id)["id"]
    body = _create(stack, volume_id, snapshot_id, "f", status=400)
    assert body["badRequest"]["message"] == (
        f"Block Device Mapping {volume_id} is a multi-attach volume and is not valid for "
        "this operation.")
    assert stack.cinder.snapshots[snapshot_id]["status"] == "available"


def test_merging_a_file_below_the_active_one_keeps_the_active_one(stack, attached):
    server, volume_id, base = attached
    first, second = (stack.cinder.create_snapshot_force(stack.context(), volume_id)["id"]
                     for _ in range(2))
    for snapshot_id, overlay in ((first, base + ".snap1"), (second, base + ".snap2")):
        open(overlay, "wb").close()
        _create(stack, volume_id, snapshot_id, os.path.basename(overlay))
        _snapshot_status(stack, snapshot_id, "creating", "90%")
    assert _source(stack, server, volume_id) == base + ".snap2"
    # Delete the first snapshot: snap1 is committed down into the base while
    # snap2 stays the active file (no pivot).
    delete_info = json.dumps({"volume_id": volume_id,
                              "file_to_merge": os.path.basename(base) + ".snap1",
                              "merge_target_file": os.path.basename(base)})
    stack.api("DELETE", f"/os-assisted-volume-snapshots/{first}?delete_info="
              f"{urllib.parse.quote(delete_info)}", token=ADMIN, status=204)
    _snapshot_status(stack, first, "deleting", "90%")
    assert _source(stack, server, volume_id) == base + ".snap2"
    assert _bdm_path(stack, server, volume_id) == base + ".snap2"
