"""Swap volume on real storage: Cinder moves an in-use volume between Ceph RBD and a file.

On the storage tier's shared all-in-one (``ceph_aio``: a one-node Ceph,
Cinder backends ``rbd`` and ``file``, Glance on RBD, computes on
``qemu:///system``) an operator's ``cinder retype --migration-policy
on-demand`` of an attached volume makes Cinder create the new volume on the
other backend and call swap volume; the compute mirrors the running guest's
disk into it with a libvirt block copy, pivots, and completes Cinder's
migration. The proofs are the storage's own, never our database's:

* the bytes: the volume is made from a Glance image of random data whose
  SHA-256 the test knows, and after the move the first bytes of the RBD
  image (``rbd export``) or of the file Cinder's file driver keeps hash the
  same;
* the guest's disk: the live domain names the new image or file, and Ceph
  lists exactly one watcher on the RBD image (the guest's QEMU), none once
  QEMU let go of it;
* Cinder: the volume keeps its id, ``in-use`` on the server with one
  attachment, the one its BDM names, on the new backend, and the temporary
  volume of the migration is gone with its image or file.

The last test kills the compute with SIGKILL in the middle of a throttled
copy (a compute of the test's own with ``[libvirt] block_copy_bandwidth``:
the all-in-one stops everything when one of its own processes dies) and
restarts it: the guest keeps its old volume, Cinder's migration ends in
``error``, and no attachment or BDM is left without its pair.
"""

import hashlib
import os
import signal
import time

import pytest

from tests.fixtures.aio_compute import ExtraCompute
from tests.integration.clients.helpers import (
    SERVER_TIMEOUT,
    compute_http,
    delete_server_quietly,
    unique,
    wait_until,
    wait_volume,
    wait_volume_gone,
)
from tests.integration.storage.proofs import (
    SYSTEM_URI,
    MiB,
    boot_on_host,
    live_disk_sources,
    name_id,
    no_leaks,
    rbd_image,
    sha256_of_rbd,
    task_state,
)
from tests.integration.storage.steps import (
    MIGRATION_TIMEOUT,
    attachment,
    backend_of,
    boot,
    detach,
    rbd,
    retype_in_use,
    volume_file,
    wait_migration,
)

pytestmark = pytest.mark.integration

# MiB/s of the throttled copy: QEMU copies its first buffer (16 MiB) at once,
# the remaining 48 MiB take about 48 s, time to look at the copy and to kill.
KILL_BANDWIDTH = 1
PERIODIC_RECONCILE = "ComputeManager._reconcile_dangling_attachments"


@pytest.fixture(scope="module")
def server(aio, nova, created):
    """Booted at 2.67 from a blank 1 GiB rbd volume; the swapped volumes attach to it."""
    return boot(aio, nova, created, {
        "source_type": "blank", "destination_type": "volume", "volume_size": 1,
        "volume_type": "rbd", "boot_index": 0, "delete_on_termination": True})


# -- what the storage says ----------------------------------------------------------------


def rbd_watchers(aio, image):
    return rbd(aio, "status", image).get("watchers", [])


def rbd_images(aio):
    return [entry["image"] if isinstance(entry, dict) else entry
            for entry in rbd(aio, "ls", "volumes") or []]


def sha256_of_file(path, length):
    with open(path, "rb") as f:
        data = f.read(length)
    assert len(data) == length, f"{path} holds {len(data)} bytes, wanted {length}"
    return hashlib.sha256(data).hexdigest()


def block_job(server_id, device):
    """libvirt's job info of the guest's disk ``device`` (``/dev/sdb``); {} without a job."""
    import libvirt

    conn = libvirt.open(SYSTEM_URI)
    try:
        dom = conn.lookupByUUIDString(server_id)
        return dom.blockJobInfo(device.rsplit("/", 1)[-1], 0) or {}
    finally:
        conn.close()


def swap_results(aio, server_id):
    """Event results of each ``swap_volume`` action of the server, oldest first."""
    _, actions, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-instance-actions",
                                 version="2.84")
    results = []
    for action in reversed(actions["instanceActions"]):
        if action["action"] != "swap_volume":
            continue
        _, detail, _ = compute_http(
            aio, "GET", f"/servers/{server_id}/os-instance-actions/{action['request_id']}",
            version="2.84")
        results.append([e["result"] for e in detail["instanceAction"]["events"]])
    return results


# -- the flow -----------------------------------------------------------------------------

def volume_from_image(cinder, created, image_id, volume_type):
    volume = cinder.volumes.create(1, name=unique(f"swap-{volume_type}"), imageRef=image_id,
                                   volume_type=volume_type)
    created["volumes"].append(volume.id)
    return wait_volume(cinder, volume.id, "available", timeout=MIGRATION_TIMEOUT)


def attach(aio, cinder, server_id, volume_id):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id}},
                                   version="2.101")
    assert status == 202, body
    wait_volume(cinder, volume_id, "in-use")
    wait_until(lambda: attachment(aio, server_id, volume_id)["status"] == "attached",
               "the attachment listed attached")
    return attachment(aio, server_id, volume_id)["device"]


def migration_status(cinder, volume_id):
    return getattr(cinder.volumes.get(volume_id), "migration_status", None)


def assert_moved(aio, cinder, server_id, volume_id, backend, payload):
    """The volume ended in-use on the server on ``backend``; the guest's disk is its data."""
    _, sha, length = payload
    # Cinder records ``success`` before it moves the new volume's attachment
    # under the volume's id (its migrate_volume_completion): wait for that.
    volume = wait_until(
        lambda: (v := cinder.volumes.get(volume_id)).attachments and v,
        f"the attachment of {volume_id} listed under its id again", timeout=60)
    assert volume.status == "in-use"
    assert backend_of(cinder, volume_id) == backend
    assert volume.volume_type == backend
    assert [a["server_id"] for a in volume.attachments] == [server_id]
    source = live_disk_sources(server_id)[volume_id]
    if backend == "rbd":
        image = rbd_image(cinder, volume_id)
        assert source == f"rbd:{image}"
        assert len(rbd_watchers(aio, image)) == 1, "the guest's QEMU watches the new image"
        assert sha256_of_rbd(aio, image, length) == sha
    else:
        path = volume_file(aio, cinder, volume_id)
        assert source == path
        assert sha256_of_file(path, length) == sha
    no_leaks(aio, cinder, server_id)


def assert_gone(aio, cinder, volume_id, backend, name):
    """The migration's other volume: gone from Cinder, its image or file gone from the backend."""
    wait_volume_gone(cinder, volume_id)
    if backend == "rbd":
        wait_until(lambda: f"volume-{name}" not in rbd_images(aio),
                   f"RBD image volume-{name} deleted")
    else:
        path = os.path.join(aio.state_dir, "cinder", "volumes", f"volume-{name}")
        wait_until(lambda: not os.path.exists(path), f"{path} deleted")


def test_retype_in_use_from_file_to_rbd_moves_the_guest_onto_the_rbd_image(
        aio, nova, cinder, created, server, payload):
    volume = volume_from_image(cinder, created, payload[0], "file")
    old_name = name_id(cinder, volume.id)
    assert sha256_of_file(volume_file(aio, cinder, volume.id), payload[2]) == payload[1]
    attach(aio, cinder, server.id, volume.id)
    assert live_disk_sources(server.id)[volume.id] == volume_file(aio, cinder, volume.id)

    target = retype_in_use(cinder, volume.id, "rbd")
    wait_migration(aio, cinder, volume.id, "success")

    assert target is None or name_id(cinder, volume.id) == target
    assert_moved(aio, cinder, server.id, volume.id, "rbd", payload)
    if target:
        assert_gone(aio, cinder, target, "file", old_name)
    assert not os.path.exists(os.path.join(aio.state_dir, "cinder", "volumes",
                                           f"volume-{old_name}")), "the old file leaked"
    last_swap = swap_results(aio, server.id)[-1]
    assert last_swap and set(last_swap) == {"Success"}, last_swap

    detach(aio, server.id, volume.id)
    wait_volume(cinder, volume.id, "available")
    wait_until(lambda: rbd_watchers(aio, rbd_image(cinder, volume.id)) == [],
               "no watcher once detached")


def test_retype_in_use_from_rbd_to_file_moves_the_guest_onto_the_file(
        aio, nova, cinder, created, server, payload):
    volume = volume_from_image(cinder, created, payload[0], "rbd")
    old_image = rbd_image(cinder, volume.id)
    assert sha256_of_rbd(aio, old_image, payload[2]) == payload[1]
    attach(aio, cinder, server.id, volume.id)
    assert len(rbd_watchers(aio, old_image)) == 1

    target = retype_in_use(cinder, volume.id, "file")
    wait_migration(aio, cinder, volume.id, "success")

    assert_moved(aio, cinder, server.id, volume.id, "file", payload)
    if target:
        assert_gone(aio, cinder, target, "rbd", old_image.split("volume-", 1)[1])
    assert old_image.split("/", 1)[1] not in rbd_images(aio), "the old RBD image leaked"

    detach(aio, server.id, volume.id)
    wait_volume(cinder, volume.id, "available")


# -- a compute killed in the middle of the copy -------------------------------------------

@pytest.fixture
def swap_compute(aio, nova):
    """A compute of the test's own: the all-in-one's configuration plus the copy's options.

    A throttled copy (``[libvirt] block_copy_bandwidth``) leaves time to kill
    it mid-copy; the dangling-attachment reconciliation runs every 2 s and is
    logged (debug), so the test sees it leave the copy alone.
    """
    extra = os.path.join(aio.state_dir, f"compute-{unique('swap-kill')}-extra.conf")
    with open(extra, "w") as f:
        f.write(f"[libvirt]\nblock_copy_bandwidth = {KILL_BANDWIDTH}\n"
                "[compute]\ndangling_attachment_reconcile_interval = 2\n"
                "[DEFAULT]\ndebug = true\n")
    compute = ExtraCompute(aio.state_dir, aio.compute_url, prefix="swap-kill",
                           extra_conf=[extra])
    try:
        yield compute
    finally:
        compute.remove(lambda server_id: delete_server_quietly(nova, server_id))


def test_a_compute_killed_mid_copy_leaves_the_guest_on_its_old_volume(
        aio, nova, cinder, created, payload, swap_compute):
    """SIGKILL while QEMU mirrors a file volume into RBD at 1 MiB/s, then a restart.

    While the copy runs, the periodic dangling-attachment reconciliation
    (every 2 s here) leaves the second attachment of the server alone. The
    guest's QEMU outlives the compute and goes on copying; the restarted
    compute cancels the copy before it lets go of the new volume, so the
    guest keeps running on its old volume, which stays in-use; Cinder's
    migration ends ``error`` and drops its new volume; every attachment has
    its BDM. A retype afterwards moves the volume as usual.
    """
    swap_compute.start()
    server_id = boot_on_host(aio, nova, swap_compute.host, "swap-kill").id
    volume = volume_from_image(cinder, created, payload[0], "file")
    old_path = volume_file(aio, cinder, volume.id)
    device = attach(aio, cinder, server_id, volume.id)
    (old_attachment,) = cinder.volumes.get(volume.id).attachments

    target = retype_in_use(cinder, volume.id, "rbd")
    assert target, "Cinder started a migration"
    job = wait_until(lambda: (block_job(server_id, device) or {}).get("end") and
                     block_job(server_id, device), "the block copy to start",
                     timeout=SERVER_TIMEOUT)
    log_at_copy, copy_seen = len(swap_compute.log()), time.monotonic()
    assert job["bandwidth"] == KILL_BANDWIDTH, job  # MiB/s as libvirt reports it
    assert task_state(nova, server_id) == "swapping_volume"
    # Several reconciliation periods into the copy: nothing was undone.
    wait_until(lambda: block_job(server_id, device).get("cur", 0) >= job["cur"] + 4 * MiB
               and time.monotonic() > copy_seen + 5, "the copy to move on", timeout=30)
    progress = block_job(server_id, device)
    assert 0 < progress["cur"] < progress["end"], progress
    attachments = {a.volume_id: a.status for a in cinder.attachments.list(
        search_opts={"all_tenants": 1, "instance_id": server_id}) if a.instance == server_id}
    assert attachments.get(volume.id) == "attached" and target in attachments, attachments
    during_copy = swap_compute.log()[log_at_copy:]
    assert during_copy.count(f"Periodic task {PERIODIC_RECONCILE} ran in") >= 2, \
        "the periodic reconciliation ran during the copy"
    assert "Deleting Cinder attachment" not in swap_compute.log()

    swap_compute.kill(signal.SIGKILL)
    # The guest outlives its compute, and so does QEMU's copy.
    assert block_job(server_id, device), "the copy goes on in QEMU"
    assert cinder.volumes.get(volume.id).status == "retyping"

    swap_compute.start()
    wait_until(lambda: task_state(nova, server_id) is None, "the swap rolled back",
               timeout=SERVER_TIMEOUT)
    wait_migration(aio, cinder, volume.id, "error")
    assert "was swapping a volume when this compute stopped" in swap_compute.log()
    assert block_job(server_id, device) == {}
    assert live_disk_sources(server_id)[volume.id] == old_path
    (kept,) = cinder.volumes.get(volume.id).attachments
    assert (kept["attachment_id"], kept["server_id"]) == (old_attachment["attachment_id"],
                                                          server_id)
    assert backend_of(cinder, volume.id) == "file"
    assert sha256_of_file(old_path, payload[2]) == payload[1]
    assert_gone(aio, cinder, target, "rbd", target)
    no_leaks(aio, cinder, server_id)
    assert nova.servers.get(server_id).status == "ACTIVE"

    # Nothing was left half-made: the same retype, unthrottled now, goes through.
    retype_in_use(cinder, volume.id, "rbd")
    wait_migration(aio, cinder, volume.id, "success")
    assert_moved(aio, cinder, server_id, volume.id, "rbd", payload)
    assert not os.path.exists(old_path), "the old file leaked"
