"""Swap volume over the whole service (API, conductor, compute, fake libvirt, fake Cinder).

The PUT os-volume_attachments/{old} with another volume, as Cinder sends it
while it migrates or retypes an in-use volume (a volume Cinder is not
migrating is refused, as by Nova). The data moves with the disk, the guest
keeps its device, and every failure leaves the server on its old volume with
nothing leaked.
"""

import hashlib

from oslo_serialization import jsonutils

from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.virt import fake as fake_libvirt
from volumesvc.virt.libvirt import swap as libvirt_swap

TOKEN = "u1:p1"
ADMIN = "admin:admin"
HOST = "fn-compute"


def _path(server, volume_id=None):
    path = f"/servers/{server}/os-volume_attachments"
    return f"{path}/{volume_id}" if volume_id else path


def _attached(stack, server, size=1):
    """A volume attached to ``server`` holding known bytes; (volume, sha256)."""
    volume = stack.cinder.create(stack.context(), size, "data", "")
    stack.attach_volume(server, volume["id"], version="2.101", status=202)
    stack.wait(lambda: stack.cinder.get(None, volume["id"])["status"] == "in-use",
               what="in-use")
    data = b"volumesvc swap " * 70000
    with open(stack.cinder._path(volume["id"]), "r+b") as f:
        f.write(data)
    return volume, _digest(stack, volume["id"])


def _digest(stack, volume_id):
    """The checksum of the volume's first 4 MiB (the written bytes and zeros after)."""
    with open(stack.cinder._path(volume_id), "rb") as f:
        return hashlib.sha256(f.read(4 * 2**20)).hexdigest()


def _xml(stack, server):
    return stack.computes[HOST].manager.driver.get_domain_xml({"uuid": server})


def _instance(stack, server):
    return instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)


def _swap(stack, server, old_id, new_id, *, version="2.1", token=ADMIN, status=202):
    return stack.api("PUT", _path(server, old_id), {"volumeAttachment": {"volumeId": new_id}},
                     version=version, token=token, status=status)[1]


def _wait_task_cleared(stack, server):
    stack.wait(lambda: _instance(stack, server).task_state is None, what="task cleared")


def _swap_events(stack, server):
    _, body, _ = stack.api("GET", f"/servers/{server}/os-instance-actions", token=ADMIN,
                           status=200)
    (action,) = [a for a in body["instanceActions"] if a["action"] == "swap_volume"]

    def finished():
        _, shown, _ = stack.api(
            "GET", f"/servers/{server}/os-instance-actions/{action['request_id']}",
            version="2.51", token=ADMIN, status=200)
        events = shown["instanceAction"]["events"]
        return events if events and all(e["result"] for e in events) else None
    return [(e["event"], e["result"]) for e in stack.wait(finished, what="events")]


def _no_orphans(stack, server):
    """Every Cinder attachment of the server has its BDM and every volume BDM its attachment."""
    bdms = bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)
    by_attachment = {b.attachment_id for b in bdms if b.volume_id}
    cinder = {a["id"] for a in stack.cinder.attachments.values() if a["instance"] == server}
    assert by_attachment == cinder


def test_swap_to_a_bigger_volume_moves_the_disk_and_its_data(stack, server):
    old, digest = _attached(stack, server)
    new = stack.cinder.start_migration(old["id"], size=2)
    old_bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), old["id"],
                                                 server)
    new_path = stack.cinder._path(new["id"])
    assert _swap(stack, server, old["id"], new["id"]) is None
    _wait_task_cleared(stack, server)
    volume = stack.cinder.get(None, old["id"])
    assert (volume["status"], volume["size"]) == ("in-use", 2)
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), old["id"], server)
    (entry,) = volume["attachments"]
    assert bdm.attachment_id == entry["attachment_id"] != old_bdm.attachment_id
    assert (bdm.device_name, bdm.volume_size) == (old_bdm.device_name, 2)
    # The guest's disk is the new file, same device, same serial; the data moved.
    assert new_path in _xml(stack, server)
    assert jsonutils.loads(bdm.connection_info)["serial"] == old["id"]
    assert _digest(stack, old["id"]) == digest
    assert _swap_events(stack, server) == [("compute_swap_volume", "Success")]
    assert stack.notifier.of("instance.volume_swap.end")
    _no_orphans(stack, server)
    # The swapped volume detaches like any other.
    stack.api("DELETE", _path(server, old["id"]), token=TOKEN, status=202)
    stack.wait(lambda: stack.cinder.get(None, old["id"])["status"] == "available",
               what="detached")
    assert new_path not in _xml(stack, server)


def test_cinder_migration_is_completed_under_the_old_id(stack, server):
    old, digest = _attached(stack, server)
    target = stack.cinder.start_migration(old["id"])
    _swap(stack, server, old["id"], target["id"])
    _wait_task_cleared(stack, server)
    volume = stack.cinder.get(None, old["id"])
    assert (volume["status"], volume["migration_status"]) == ("in-use", "success")
    assert target["id"] not in stack.cinder.volumes
    assert ("migrate_volume_completion", (old["id"], target["id"], False)) in stack.cinder.calls
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), old["id"], server)
    (entry,) = volume["attachments"]
    assert bdm.attachment_id == entry["attachment_id"]
    # The old id now names the target's file, which the guest runs on.
    assert stack.cinder._path(old["id"]) == stack.cinder._path(target["id"])
    assert stack.cinder._path(old["id"]) in _xml(stack, server)
    assert _digest(stack, old["id"]) == digest
    _no_orphans(stack, server)


def test_an_attachment_cinder_loses_completing_the_migration_is_made_again(stack, server):
    """Regression: Cinder 29 can delete the moved attachment with the leftover volume.

    Seen on a real Cinder (a file volume retyped in use to rbd): the
    migration ended ``success``, the volume ``in-use`` without any
    attachment, and the BDM named an attachment that no longer existed, so
    the reconciliation would have taken the disk from the guest.
    """
    old, digest = _attached(stack, server)
    target = stack.cinder.start_migration(old["id"])
    stack.cinder.lose_migrated_attachments = True
    _swap(stack, server, old["id"], target["id"])
    _wait_task_cleared(stack, server)
    volume = stack.cinder.get(None, old["id"])
    assert (volume["status"], volume["migration_status"]) == ("in-use", "success")
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), old["id"], server)
    (entry,) = volume["attachments"]
    assert bdm.attachment_id == entry["attachment_id"]
    assert jsonutils.loads(bdm.connection_info)["attachment_id"] == bdm.attachment_id
    attachment = stack.cinder.attachments[bdm.attachment_id]
    assert (attachment["status"], attachment["instance"]) == ("attached", server)
    assert attachment["mountpoint"] == bdm.device_name
    assert stack.cinder._path(old["id"]) in _xml(stack, server)
    assert _digest(stack, old["id"]) == digest
    _no_orphans(stack, server)
    # The reconciliation finds nothing dangling, and the volume detaches.
    (report,) = stack.conductor_api().reconcile_volume_attachments(
        stack.admin_context(), instance_uuids=[server])
    assert report["removed_bdms"] == [] and report["deleted_attachments"] == []
    stack.api("DELETE", _path(server, old["id"]), token=TOKEN, status=202)
    stack.wait(lambda: stack.cinder.get(None, old["id"])["status"] == "available",
               what="detached")
    assert stack.cinder._path(old["id"]) not in _xml(stack, server)


def test_a_failed_copy_keeps_the_old_volume_and_fails_the_migration(stack, server,
                                                                    monkeypatch):
    old, digest = _attached(stack, server)
    target = stack.cinder.start_migration(old["id"])

    def broken(self, disk_name, destxml, params=None, flags=0):
        raise fake_libvirt.libvirtError("mirror failed: I/O error", 1)
    monkeypatch.setattr(fake_libvirt.FakeDomain, "blockCopy", broken)
    _swap(stack, server, old["id"], target["id"])
    _wait_task_cleared(stack, server)
    volume = stack.cinder.get(None, old["id"])
    assert (volume["status"], volume["migration_status"]) == ("in-use", "error")
    assert target["id"] not in stack.cinder.volumes
    assert stack.cinder._path(old["id"]) in _xml(stack, server)
    assert _digest(stack, old["id"]) == digest
    events = _swap_events(stack, server)
    assert events == [("compute_swap_volume", "Error")]
    _no_orphans(stack, server)


class _Killed(BaseException):
    """The compute process dying: no handler of the swap runs any more."""


def test_a_compute_killed_mid_copy_is_rolled_back_when_it_starts(stack, server,
                                                                 monkeypatch):
    old, digest = _attached(stack, server)
    target = stack.cinder.start_migration(old["id"])
    copying = []

    def die(guest, target_dev, timeout):
        copying.append(guest.block_job_info(target_dev))
        raise _Killed()
    monkeypatch.setattr(libvirt_swap, "_wait_ready", die)
    _swap(stack, server, old["id"], target["id"])
    stack.wait(lambda: copying, what="the copy started")
    # Killed mid-copy: the server still in its task, two attachments, a copy job.
    assert _instance(stack, server).task_state == "swapping_volume"
    assert len([a for a in stack.cinder.attachments.values() if a["instance"] == server]) == 3
    monkeypatch.undo()
    driver = stack.computes[HOST].manager.driver
    stack.computes.pop(HOST).stop()
    stack.add_compute(HOST, driver=driver)
    _wait_task_cleared(stack, server)
    # The volumes are project p1's, not the compute's: it must ask for every project.
    assert ("attachment_get_all", (server, None, True)) in stack.cinder.calls
    volume = stack.cinder.get(None, old["id"])
    assert (volume["status"], volume["migration_status"]) == ("in-use", "error")
    assert target["id"] not in stack.cinder.volumes
    assert stack.cinder._path(old["id"]) in _xml(stack, server)
    guest = driver.host.get_guest(server)
    assert all(not guest.block_job_info(d.target_dev) for d in guest.get_disks())
    assert _digest(stack, old["id"]) == digest
    _no_orphans(stack, server)


def test_refusals(stack, server):
    old, _ = _attached(stack, server, size=2)
    small = stack.cinder.create(stack.context(), 1, "small", "")
    # As Nova: only a volume Cinder is migrating is swapped.
    _, body, _ = stack.api("PUT", _path(server, old["id"]), {"volumeAttachment": {
        "volumeId": small["id"]}}, token=ADMIN, status=409)
    assert "is not being migrated" in body["conflictingRequest"]["message"]
    stack.cinder.volumes[old["id"]]["migration_status"] = "migrating"
    _, body, _ = stack.api("PUT", _path(server, old["id"]), {"volumeAttachment": {
        "volumeId": small["id"]}}, token=ADMIN, status=400)
    assert body["badRequest"]["message"] == (
        "Invalid volume for swap: New volume must be the same size or larger.")
    other, _ = _attached(stack, server)
    _, body, _ = stack.api("PUT", _path(server, old["id"]), {"volumeAttachment": {
        "volumeId": other["id"]}}, token=ADMIN, status=400)
    assert "must be detached" in body["badRequest"]["message"]
    # Not an admin: the swap policy.
    new = stack.cinder.create(stack.context(), 2, "new", "")
    stack.api("PUT", _path(server, old["id"]), {"volumeAttachment": {
        "volumeId": new["id"]}}, token=TOKEN, status=403)
    # A server in a task is refused (409) and nothing is reserved.
    instance_obj.save(stack.db, stack.admin_context(), server,
                      {"task_state": "swapping_volume"})
    stack.api("PUT", _path(server, old["id"]), {"volumeAttachment": {
        "volumeId": new["id"]}}, token=ADMIN, status=409)
    assert stack.cinder.get(None, new["id"])["status"] == "available"
