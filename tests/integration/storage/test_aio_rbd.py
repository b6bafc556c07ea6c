"""The all-in-one with its default options: volumes on a real Ceph, opened by QEMU.

The storage tier's ``volumesvc-aio`` (``--auth noauth2 --computes 2``, storage left at its
default: a one-node Ceph, Cinder backends ``rbd`` and ``file``, Glance on
RBD, both computes on ``qemu:///system``) serves the whole module. Proof that
QEMU really opened an RBD volume is Ceph's own: ``rbd status`` lists the
guest as a watcher, and lists none once the disk is detached. The tests run
in file order and build on each other's servers (module fixtures; ``aio``,
``nova``, ``cinder`` and ``created`` come from ``conftest.py``).
"""

import contextlib
import json
import os
import subprocess
import uuid

import pytest

from tests.integration.clients.helpers import (
    SERVER_TIMEOUT,
    compute_http,
    delete_volume_quietly,
    wait_server_gone,
    wait_until,
    wait_volume,
    wait_volume_gone,
)
from tests.integration.storage.steps import (
    GiB,
    attach,
    attachment,
    boot,
    detach,
    guest_disk_bytes,
    new_volume,
    rbd,
    root_volume_id,
    volume_host,
    wait_watchers,
)
from volumesvc_aio import ceph as ceph_mod

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def blank_server(aio, nova, created):
    """Booted at 2.67 from a blank 1 GiB volume of type rbd."""
    return boot(aio, nova, created, {
        "source_type": "blank", "destination_type": "volume", "volume_size": 1,
        "volume_type": "rbd", "boot_index": 0, "delete_on_termination": True})


@pytest.fixture(scope="module")
def image_server(aio, nova, created):
    """Booted from the starter image into a 1 GiB volume of type rbd."""
    return boot(aio, nova, created, {
        "source_type": "image", "uuid": aio.image_id, "destination_type": "volume",
        "volume_size": 1, "volume_type": "rbd", "boot_index": 0,
        "delete_on_termination": True})


def test_boot_from_a_blank_rbd_volume_is_opened_by_qemu(aio, cinder, blank_server):
    volume_id = root_volume_id(blank_server)
    assert volume_host(cinder, volume_id).split("#")[0].endswith("@rbd")
    assert len(wait_watchers(aio, volume_id, 1)) == 1
    assert rbd(aio, "info", f"volumes/volume-{volume_id}").get("parent") is None


def test_boot_from_the_starter_image_gives_an_rbd_clone(aio, cinder, image_server):
    volume_id = root_volume_id(image_server)
    assert volume_host(cinder, volume_id).split("#")[0].endswith("@rbd")
    parent = rbd(aio, "info", f"volumes/volume-{volume_id}")["parent"]
    assert (parent["pool"], parent["image"], parent["snapshot"]) == (
        "images", aio.image_id, "snap")
    assert len(wait_watchers(aio, volume_id, 1)) == 1


def test_rbd_and_file_volumes_attach_and_an_rbd_extend_grows_the_guest_disk(
        aio, nova, cinder, created, blank_server):
    server_id = blank_server.id
    data = new_volume(cinder, created, "rbd")
    plain = new_volume(cinder, created, "file")
    assert volume_host(cinder, data.id).split("#")[0].endswith("@rbd")
    assert volume_host(cinder, plain.id).split("#")[0].endswith("@file")
    attach(aio, server_id, data.id)
    attach(aio, server_id, plain.id)
    for volume in (data, plain):
        wait_volume(cinder, volume.id, "in-use")
        wait_until(lambda v=volume: attachment(aio, server_id, v.id)["status"] == "attached",
                   "the attachment to be listed attached")
    device = attachment(aio, server_id, data.id)["device"]
    assert len(wait_watchers(aio, data.id, 1)) == 1
    assert guest_disk_bytes(server_id, device) == GiB

    # Cinder's RBD driver grows the image, then tells the compute (2.51).
    cinder.volumes.extend(data.id, 2)
    wait_until(lambda: cinder.volumes.get(data.id).size == 2
               and cinder.volumes.get(data.id).status == "in-use",
               "the extended volume to be in-use at 2 GiB")
    wait_until(lambda: guest_disk_bytes(server_id, device) == 2 * GiB,
               "the guest's disk to grow to 2 GiB", timeout=60)
    _, actions, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-instance-actions",
                                 version="2.101")
    (extend,) = [a for a in actions["instanceActions"] if a["action"] == "extend_volume"]

    def finished():
        _, detail, _ = compute_http(
            aio, "GET", f"/servers/{server_id}/os-instance-actions/{extend['request_id']}",
            version="2.101")
        events = detail["instanceAction"]["events"]
        return events and all(e["finish_time"] for e in events) and events
    events = wait_until(finished, "the extend_volume action to finish")
    assert [e["result"] for e in events] == ["Success"] * len(events), events

    for volume in (data, plain):
        detach(aio, server_id, volume.id)
    for volume in (data, plain):
        wait_volume(cinder, volume.id, "available")
    assert wait_watchers(aio, data.id, 0) == []


def test_a_multiattach_rbd_volume_on_two_servers_on_two_computes(
        aio, nova, cinder, created, blank_server, image_server):
    hosts = {getattr(nova.servers.get(s.id), "OS-EXT-SRV-ATTR:host")
             for s in (blank_server, image_server)}
    assert len(hosts) == 2, hosts
    vtype = cinder.volume_types.create(f"multiattach-rbd-{uuid.uuid4().hex[:6]}")
    try:
        vtype.set_keys({"multiattach": "<is> True", "volume_backend_name": "rbd"})
        shared = new_volume(cinder, created, vtype.id)
        assert shared.multiattach
        for server in (blank_server, image_server):
            attach(aio, server.id, shared.id)
            wait_until(lambda s=server: s.id in [
                a["server_id"] for a in cinder.volumes.get(shared.id).attachments],
                "the shared volume attached", timeout=SERVER_TIMEOUT)
        wait_volume(cinder, shared.id, "in-use")
        assert len(wait_watchers(aio, shared.id, 2)) == 2
        # One detach at a time: Cinder holds the volume in ``detaching``
        # until the first ends and refuses a second begin (as with Nova).
        detach(aio, blank_server.id, shared.id)
        wait_until(lambda: [a["server_id"] for a in cinder.volumes.get(shared.id).attachments]
                   == [image_server.id] and cinder.volumes.get(shared.id).status == "in-use",
                   "the first server's attachment gone", timeout=SERVER_TIMEOUT)
        assert len(wait_watchers(aio, shared.id, 1)) == 1
        detach(aio, image_server.id, shared.id)
        wait_volume(cinder, shared.id, "available")
        assert wait_watchers(aio, shared.id, 0) == []
        cinder.volumes.delete(shared.id)
        wait_volume_gone(cinder, shared.id)
        cinder.volume_types.delete(vtype.id)
    finally:
        # After a failure the volume may still use the type; ``created`` deletes it.
        with contextlib.suppress(Exception):
            cinder.volume_types.delete(vtype.id)


def test_after_deleting_everything_no_rbd_image_has_a_watcher(aio, nova, cinder, created):
    """Last: every server and volume of the module deleted; no watcher, no attachment left."""
    names = [image["image"] if isinstance(image, dict) else image
             for image in rbd(aio, "ls", "volumes")]
    assert names, "the module made RBD volumes"
    for server_id in created["servers"]:
        nova.servers.delete(server_id)
    for server_id in created["servers"]:
        wait_server_gone(nova, server_id)
    for volume_id in created["volumes"]:
        delete_volume_quietly(cinder, volume_id)
    for name in names:
        status = subprocess.run(
            ["rbd", "-c", os.path.join(aio.state_dir, "ceph", "ceph.conf"), "--id", "admin",
             "status", f"volumes/{name}", "--format", "json"],
            capture_output=True, text=True, timeout=60, env=ceph_mod.clean_env())
        if status.returncode == 0:  # the image may be gone with its volume
            assert json.loads(status.stdout).get("watchers", []) == [], name
    assert rbd(aio, "ls", "volumes") == [], "deleted volumes left RBD images"
    attachments = cinder.attachments.list(search_opts={"all_tenants": 1})
    assert [a.id for a in attachments] == []
