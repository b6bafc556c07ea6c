"""The compute's typed view of a BDM (``compute/bdm.py``) against the conductor's wire dict."""

import dataclasses
from unittest import mock

import pytest
from oslo_serialization import jsonutils

from volumesvc.compute import bdm as bdm_mod
from volumesvc.objects import block_device as bdm_obj

INFO = {"driver_volume_type": "iscsi", "serial": "v1",
        "data": {"target_lun": 1, "access_mode": "rw"}}


def _wire(**values):
    """A wire dict as the conductor sends it: its object's ``to_dict()``."""
    return bdm_obj.BlockDeviceMapping(**{
        "id": 7, "uuid": "b1", "instance_uuid": "srv", "source_type": "volume",
        "destination_type": "volume", "boot_index": 0, "device_name": "/dev/vda",
        "volume_id": "v1", "attachment_id": "a1", "attach_status": "attached",
        "connection_info": jsonutils.dumps(INFO), **values}).to_dict()


def test_every_field_of_the_view_is_a_field_of_the_conductors_object():
    """The view mirrors the object's names: a misspelt field would read None for ever."""
    names = {f.name for f in dataclasses.fields(bdm_mod.BDM)} - {"_wire"}
    assert names <= set(bdm_obj.BlockDeviceMapping.__dataclass_fields__)


def test_the_view_reads_the_wire_fields_by_name():
    bdm = bdm_mod.BDM.from_wire(_wire(read_only=True, delete_on_termination=True))
    assert (bdm.uuid, bdm.id, bdm.instance_uuid, bdm.volume_id, bdm.attachment_id) == (
        "b1", 7, "srv", "v1", "a1")
    assert (bdm.device_name, bdm.boot_index, bdm.attach_status) == ("/dev/vda", 0, "attached")
    assert bdm.is_volume and bdm.read_only and bdm.delete_on_termination
    assert not bdm.deleted


def test_connection_info_is_decoded_once():
    bdm = bdm_mod.BDM.from_wire(_wire())
    with mock.patch.object(bdm_mod.jsonutils, "loads", wraps=jsonutils.loads) as loads:
        assert bdm.connection_info == INFO
        assert bdm.connection_info == INFO
        assert bdm.has_connection
    assert loads.call_count == 1


def test_a_view_that_is_never_asked_for_its_connection_decodes_nothing():
    with mock.patch.object(bdm_mod.jsonutils, "loads") as loads:
        bdm = bdm_mod.BDM.from_wire(_wire(connection_info="not json"))
        assert bdm.volume_id == "v1" and bdm.has_connection
    loads.assert_not_called()


def test_each_reader_gets_its_own_connection_info():
    """os-brick writes into the info it is given: that must not reach the next reader."""
    bdm = bdm_mod.BDM.from_wire(_wire())
    first = bdm.connection_info
    first["data"]["device_path"] = "/dev/sdb"
    assert "device_path" not in bdm.connection_info["data"]


@pytest.mark.parametrize("stored", [None, ""])
def test_absent_connection_info_is_none(stored):
    bdm = bdm_mod.BDM.from_wire(_wire(connection_info=stored))
    assert bdm.connection_info is None
    assert not bdm.has_connection
    assert bdm.connection_info_json == stored
    assert (bdm.connection_info or {}).get("multiattach") is None


def test_a_missing_key_reads_as_absent():
    bdm = bdm_mod.BDM.from_wire({"uuid": "b1"})
    assert bdm.connection_info is None and bdm.volume_id is None
    assert bdm.read_only is False and bdm.boot_index is None


def test_connection_info_already_decoded_is_taken_as_it_is():
    bdm = bdm_mod.BDM.from_wire(dict(_wire(), connection_info=dict(INFO)))
    assert bdm.connection_info == INFO
    assert bdm.connection_info_json == jsonutils.dumps(INFO)


def test_round_trip_to_the_wire_dict_is_exact():
    wire = dict(_wire(), newer_field="kept")
    bdm = bdm_mod.BDM.from_wire(wire)
    assert bdm.to_wire() == wire
    assert bdm_mod.BDM.from_wire(bdm.to_wire()) == bdm
    # The conductor reads what it sent back as its own object.
    assert bdm_obj.BlockDeviceMapping.from_dict(bdm.to_wire()) == \
        bdm_obj.BlockDeviceMapping.from_dict(wire)


def test_the_view_is_read_only_and_owns_its_dict():
    wire = _wire()
    bdm = bdm_mod.BDM.from_wire(wire)
    wire["volume_id"] = "changed"
    bdm.to_wire()["attachment_id"] = "changed"
    assert bdm.volume_id == "v1" and bdm.to_wire()["attachment_id"] == "a1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        bdm.volume_id = "v2"  # type: ignore[misc]


def test_replace_gives_a_new_view_with_the_saved_values():
    bdm = bdm_mod.BDM.from_wire(_wire())
    new = {"driver_volume_type": "rbd", "data": {}}
    saved = bdm.replace(attachment_id="a2",
                        connection_info=bdm_mod.encode_connection_info(new))
    assert (saved.attachment_id, saved.connection_info) == ("a2", new)
    assert (bdm.attachment_id, bdm.connection_info) == ("a1", INFO)
    released = saved.replace(connection_info=bdm_mod.encode_connection_info(None))
    assert released.connection_info is None and released.to_wire()["connection_info"] is None


def test_replace_in_swaps_the_same_object_only():
    first, second = bdm_mod.from_wire_list([_wire(), _wire(uuid="b2")])
    bdms = [first, second]
    new = bdm_mod.replace_in(bdms, first, first.replace(volume_id="v9"))
    assert bdms == [new, second] and bdms[0].volume_id == "v9"


def test_of_wraps_a_dict_and_keeps_a_view():
    bdm = bdm_mod.of(_wire())
    assert bdm_mod.of(bdm) is bdm
    assert bdm_mod.to_wire_list([bdm]) == [_wire()]
