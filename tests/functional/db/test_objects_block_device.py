"""Block device mappings on every backend: lookups by volume, save, soft delete."""

import pytest

from volumesvc import exception
from volumesvc.objects import block_device, instance


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
