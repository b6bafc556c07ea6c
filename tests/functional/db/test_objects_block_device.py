"""Block device mappings on every backend: lookups by volume, save, soft delete, attach insert."""

import threading

import pytest

from volumesvc import exception
from volumesvc.db import api as db_api
from volumesvc.objects import block_device, instance
from volumesvc.virt import block_device as virt_bd


@pytest.fixture
def inst(db, ctx):
    return instance.create(db, ctx, {"project_id": "p1", "vm_state": "active"})


def _volume_bdm(db, ctx, inst, volume_id, **values):
    base = {"instance_uuid": inst.uuid, "source_type": "volume", "destination_type": "volume",
            "volume_id": volume_id, "device_name": "/dev/vdb", "volume_type": "lvm",
            "attachment_id": "att-" + volume_id, "delete_on_termination": False}
    base.update(values)
    return block_device.create(db, ctx, base)


def test_create_get_and_dict(db, ctx, inst):
    bdm = _volume_bdm(db, ctx, inst, "v1", connection_info='{"driver_volume_type": "local"}')
    assert bdm.is_volume and bdm.uuid and bdm.volume_type == "lvm"
    got = block_device.get_by_uuid(db, ctx, bdm.uuid)
    assert got == bdm
    assert block_device.BlockDeviceMapping.from_dict(got.to_dict()) == got
    image = block_device.create(db, ctx, {"instance_uuid": inst.uuid, "source_type": "image",
                                          "destination_type": "local", "boot_index": 0})
    assert not image.is_volume
    with pytest.raises(exception.BDMNotFound):
        block_device.get_by_uuid(db, ctx, "missing")
    with pytest.raises(exception.Invalid):
        block_device.create(db, ctx, {"instance_uuid": inst.uuid, "bogus": 1})


def test_lookups_by_instance_and_volume(db, ctx, inst):
    other = instance.create(db, ctx, {"project_id": "p1"})
    one = _volume_bdm(db, ctx, inst, "v1")
    _volume_bdm(db, ctx, inst, "v2", device_name="/dev/vdc")
    shared = _volume_bdm(db, ctx, other, "v1")  # multiattach
    assert [b.volume_id for b in block_device.list_by_instance(db, ctx, inst.uuid)] == [
        "v1", "v2"]
    assert {b.uuid for b in block_device.list_by_volume(db, ctx, "v1")} == {one.uuid, shared.uuid}
    assert block_device.get_by_volume_and_instance(db, ctx, "v1", other.uuid).uuid == shared.uuid
    with pytest.raises(exception.VolumeBDMNotFound):
        block_device.get_by_volume_and_instance(db, ctx, "v2", other.uuid)


def test_save(db, ctx, inst):
    bdm = _volume_bdm(db, ctx, inst, "v1", attachment_id=None)
    saved = block_device.save(db, ctx, bdm.uuid, {"attachment_id": "a-1",
                                                  "connection_info": '{"x": 1}',
                                                  "volume_size": 2})
    assert (saved.attachment_id, saved.connection_info, saved.volume_size) == (
        "a-1", '{"x": 1}', 2)
    assert block_device.get_by_uuid(db, ctx, bdm.uuid) == saved
    with pytest.raises(exception.Invalid):
        block_device.save(db, ctx, bdm.uuid, {"deleted": 1})
    with pytest.raises(exception.BDMNotFound):
        block_device.save(db, ctx, "missing", {"volume_size": 1})


def test_destroy_is_soft(db, ctx, inst):
    bdm = _volume_bdm(db, ctx, inst, "v1")
    block_device.destroy(db, ctx, bdm.uuid)
    assert block_device.list_by_volume(db, ctx, "v1") == []
    with pytest.raises(exception.VolumeBDMNotFound):
        block_device.get_by_volume_and_instance(db, ctx, "v1", inst.uuid)
    kept = block_device.list_by_volume(db, ctx, "v1", read_deleted="only")
    assert [b.attachment_id for b in kept] == ["att-v1"] and kept[0].deleted
    # The volume can be attached again after a detach.
    again = _volume_bdm(db, ctx, inst, "v1", attachment_id="att-2")
    assert block_device.get_by_volume_and_instance(db, ctx, "v1", inst.uuid).uuid == again.uuid
    with pytest.raises(exception.BDMNotFound):
        block_device.destroy(db, ctx, bdm.uuid)


def test_save_is_one_update_and_stamps_updated_at(db, ctx, inst):
    """The returned BDM is the row as written (UPDATE ... RETURNING where the backend has it)."""
    bdm = _volume_bdm(db, ctx, inst, "v1", attachment_id=None)
    saved = block_device.save(db, ctx, bdm.uuid, {"attachment_id": "a-1"})
    assert saved.updated_at is not None and saved.attachment_id == "a-1"
    assert saved == block_device.get_by_uuid(db, ctx, bdm.uuid)
    block_device.destroy(db, ctx, bdm.uuid)
    with pytest.raises(exception.BDMNotFound):
        block_device.save(db, ctx, bdm.uuid, {"attachment_id": "a-2"})
    assert block_device.get_by_uuid(db, ctx, bdm.uuid, read_deleted="yes").attachment_id == "a-1"


def test_status_compare_and_swap(db, ctx, inst):
    """save_if writes only from the expected status and returns the BDM as it then is."""
    from volumesvc.objects import attachment_status

    bdm = _volume_bdm(db, ctx, inst, "v1", attach_status="attaching")
    done = attachment_status.save_if(db, ctx, bdm.uuid, {"attach_status": "attached"},
                                     "attaching")
    assert done.attach_status == "attached" and done == block_device.get_by_uuid(
        db, ctx, bdm.uuid)
    late = attachment_status.save_if(db, ctx, bdm.uuid, {"attach_status": "error"},
                                     "attaching")
    assert late.attach_status == "attached" and late.updated_at == done.updated_at


def _attach_values(inst, volume_id):
    return {"instance_uuid": inst.uuid, "source_type": "volume", "destination_type": "volume",
            "volume_id": volume_id, "disk_bus": "virtio", "device_type": "disk",
            "attachment_id": "att-" + volume_id, "attach_status": "attaching"}


def _virtio_name(used_names):
    return virt_bd.get_next_device_name(used_names, "virtio")


def test_an_attach_is_one_insert_with_the_next_free_device_name(db, ctx, inst):
    _volume_bdm(db, ctx, inst, "root", device_name="/dev/vda", boot_index=0)
    made = block_device.create_for_attach(db, ctx, _attach_values(inst, "v1"),
                                          device_name_for=_virtio_name, max_volumes=-1)
    assert (made.device_name, made.attachment_id, made.attach_status) == (
        "/dev/vdb", "att-v1", "attaching")
    assert made == block_device.get_by_uuid(db, ctx, made.uuid)
    with pytest.raises(exception.VolumeAlreadyAttached):
        block_device.create_for_attach(db, ctx, _attach_values(inst, "v1"),
                                       device_name_for=_virtio_name, max_volumes=-1)
    with pytest.raises(exception.TooManyDiskDevices):
        block_device.create_for_attach(db, ctx, _attach_values(inst, "v2"),
                                       device_name_for=_virtio_name, max_volumes=2)
    instance.destroy(db, ctx, inst.uuid)
    with pytest.raises(exception.InstanceNotFound):
        block_device.create_for_attach(db, ctx, _attach_values(inst, "v3"),
                                       device_name_for=_virtio_name, max_volumes=-1)


def test_concurrent_attaches_to_one_server_never_share_a_device_name(db, ctx, inst):
    """Four attaches at once, each on its own engine (as conductors in separate processes)."""
    databases = [db] + [db_api.Database(db.conf) for _ in range(3)]
    barrier = threading.Barrier(len(databases))
    names, errors = {}, []

    def attach(index, database):
        barrier.wait()
        try:
            names[index] = block_device.create_for_attach(
                database, None, _attach_values(inst, f"v{index}"),
                device_name_for=_virtio_name, max_volumes=-1).device_name
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=attach, args=(i, d))
                   for i, d in enumerate(databases)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for database in databases[1:]:
            database.dispose()
    assert errors == []
    assert sorted(names.values()) == ["/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"]


def test_the_attached_report_saves_the_connection_whatever_the_status(db, ctx, inst):
    """``attached`` only from ``attaching``; the connection info in any case, in one write."""
    from volumesvc.objects import attachment_status

    bdm = _volume_bdm(db, ctx, inst, "v1", attach_status="detaching")
    saved = attachment_status.save_if(db, ctx, bdm.uuid, {
        "connection_info": '{"serial": "v1"}', "attach_status": "attached"}, "attaching")
    assert (saved.attach_status, saved.connection_info) == ("detaching", '{"serial": "v1"}')
    other = _volume_bdm(db, ctx, inst, "v2", attach_status="attaching")
    saved = attachment_status.save_if(db, ctx, other.uuid, {
        "connection_info": "{}", "attach_status": "attached"}, "attaching")
    assert (saved.attach_status, saved.connection_info) == ("attached", "{}")
    block_device.destroy(db, ctx, other.uuid)
    with pytest.raises(exception.BDMNotFound):
        attachment_status.save_if(db, ctx, other.uuid, {
            "connection_info": "{}", "attach_status": "attached"}, "attaching")
