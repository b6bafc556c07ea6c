"""api/logic/attach.py: the synchronous attach/detach/update/swap checks, no app."""

import datetime
import types

import pytest

from volumesvc import exception
from volumesvc.api import microversions as mv
from volumesvc.api.logic import attach, states

V2_1, V2_20, V2_59, V2_60 = (mv.parse(v) for v in ("2.1", "2.20", "2.59", "2.60"))
USER = types.SimpleNamespace(is_admin=False)
SERVER = "5e4e0000-0000-4000-8000-000000000001"
OTHER = "5e4e0000-0000-4000-8000-000000000002"
VOL = "b01e0000-0000-4000-8000-000000000001"


def _instance(**values):
    base = dict(uuid=SERVER, vm_state="active", task_state=None, locked=False,
                launched_at=datetime.datetime(2026, 1, 1), host="h1")
    base.update(values)
    return types.SimpleNamespace(**base)


def _bdm(instance_uuid=SERVER, **values):
    base = dict(instance_uuid=instance_uuid, volume_id=VOL, attachment_id=None,
                boot_index=None, device_name="/dev/vdb", tag=None)
    base.update(values)
    return types.SimpleNamespace(**base)


def _volume(multiattach=False, **values):
    return {"id": VOL, "multiattach": multiattach, "attachments": [], **values}


def _check(version=V2_60, instance=None, volume=None, bdms=(), **kwargs):
    attach.check_attach(USER, version=version, instance=instance or _instance(),
                        volume=volume or _volume(), volume_bdms=list(bdms), **kwargs)


@pytest.mark.parametrize("device", ["/dev/vdb", "/dev/sdc1", "/dev/xvda", "vdb", "/dev/hdz"])
def test_match_device_is_novas(device):
    assert attach.match_device(device) is device.startswith("/dev/")


def test_a_free_volume_passes():
    _check()


def test_lock_comes_before_everything_in_the_api():
    with pytest.raises(exception.InstanceIsLocked):
        _check(instance=_instance(locked=True), device="bad",
               bdms=[_bdm(OTHER)])


@pytest.mark.parametrize(("version", "refused"), [(V2_1, True), (V2_20, False)])
def test_shelved_needs_2_20(version, refused):
    instance = _instance(vm_state="shelved")
    if refused:
        with pytest.raises(exception.InstanceInvalidState):
            _check(version=version, instance=instance)
    else:
        _check(version=version, instance=instance)


def test_device_then_already_attached():
    with pytest.raises(exception.InvalidDevicePath):
        _check(device="vdb", bdms=[_bdm(OTHER)])
    with pytest.raises(exception.VolumeAlreadyAttached) as err:
        _check(bdms=[_bdm(OTHER), _bdm(OTHER)])
    assert err.value.message == f"volume {VOL} is already attached to instances: {OTHER}"


def test_multiattach_may_go_to_another_server_but_not_twice_to_this_one():
    _check(volume=_volume(True), bdms=[_bdm(OTHER)])
    with pytest.raises(exception.VolumeAlreadyAttached) as err:
        _check(volume=_volume(True), bdms=[_bdm(OTHER), _bdm(SERVER)])
    assert err.value.message.endswith(f"instances: {SERVER}")


def test_multiattach_below_2_60():
    with pytest.raises(exception.MultiattachNotSupportedOldMicroversion):
        _check(version=V2_59, volume=_volume(True))


def test_shelved_offloaded_refuses_tags_and_multiattach():
    offloaded = _instance(vm_state="shelved_offloaded", host=None)
    _check(instance=offloaded)
    with pytest.raises(exception.VolumeTaggedAttachToShelvedNotSupported):
        _check(instance=offloaded, tag="t")
    with pytest.raises(exception.MultiattachToShelvedNotSupported):
        _check(instance=offloaded, volume=_volume(True))


def test_root_volume():
    attach.check_root(_bdm(boot_index=None))
    with pytest.raises(exception.CannotDetachRootVolume):
        attach.check_root(_bdm(boot_index=0))


def test_attachment_id_prefers_the_bdm_then_cinder():
    volume = _volume(attachments=[{"server_id": OTHER, "attachment_id": "a-other"},
                                  {"server_id": SERVER, "attachment_id": "a-mine"}])
    assert attach.attachment_id_for(_bdm(attachment_id="a-bdm"), volume, SERVER) == "a-bdm"
    assert attach.attachment_id_for(_bdm(), volume, SERVER) == "a-mine"
    assert attach.attachment_id_for(_bdm(), _volume(), SERVER) is None


def test_echoed_fields_must_not_change():
    bdm, instance = _bdm(tag="t"), _instance()
    attach.check_not_mutated({"id": VOL, "serverId": SERVER, "device": "/dev/vdb",
                              "tag": "t", "volumeId": VOL}, bdm, instance)
    for key, value in (("id", OTHER), ("serverId", OTHER), ("device", "/dev/vdc"),
                       ("tag", "u")):
        with pytest.raises(exception.AttachmentPropertyNotMutable) as err:
            attach.check_not_mutated({key: value}, bdm, instance)
        assert err.value.message == f"The {key} property is not mutable"


def _new(status="available", size=1, attach_status="detached"):
    return {"id": "new", "status": status, "size": size, "attach_status": attach_status}


def test_swap_refusals_in_order():
    with pytest.raises(exception.InstanceInvalidState):
        attach.check_swap(USER, _instance(vm_state="stopped"), _volume(True), _new("in-use"), 2)
    with pytest.raises(exception.MultiattachSwapVolumeNotSupported):
        attach.check_swap(USER, _instance(), _volume(True), _new("in-use"), 2)
    with pytest.raises(exception.SwapVolumeNotMigrating):
        attach.check_swap(USER, _instance(), _volume(True), _new("in-use"), 1)
    migrating = _volume(True, migration_status="migrating")
    for new in (_new("in-use"), _new("error"), _new(attach_status="attached")):
        with pytest.raises(exception.SwapVolumeInvalid, match="must be detached"):
            attach.check_swap(USER, _instance(), migrating, new, 1)
    with pytest.raises(exception.SwapVolumeInvalid, match="same size or larger"):
        attach.check_swap(USER, _instance(), dict(migrating, size=2), _new(), 1)


@pytest.mark.parametrize("new", [_new(), _new("reserved", size=3)])
def test_a_valid_swap_passes(new):
    old = _volume(migration_status="migrating", size=min(new["size"], 2))
    attach.check_swap(USER, _instance(), old, new, 1)


def test_host_up_skips_servers_without_a_host():
    attach.check_host_up(None, None, None, _instance(host=None))


@pytest.mark.parametrize("version", ["2.19", "2.20"])
def test_a_gate_that_checks_no_vm_state_stays_unchecked(version):
    # Below 2.20 the shelved states are subtracted; a gate without vm_states
    # (states.ANY) used to raise a TypeError there instead of staying open.
    gate = states.Gate(action="probe", vm_states=states.ANY, task_states=states.ANY)
    assert attach.gate_vm_states(mv.parse(version), gate) is states.ANY
    shelved_out = attach.gate_vm_states(mv.parse("2.19"), states.ATTACH)
    assert not shelved_out & states.SHELVED_STATES


@pytest.mark.parametrize("asked, same", [
    ({}, False),  # no tag is not the tag "data"
    ({"tag": "data"}, True),
    ({"tag": "data", "device": "/dev/vdb", "delete_on_termination": False}, True),
    ({"tag": "data", "read_only": False}, True),
    ({"tag": "data", "device": "/dev/vdc"}, False),
    ({"tag": "data", "delete_on_termination": True}, False),
    ({"tag": "data", "read_only": True}, False),
])
def test_a_repeat_of_an_owed_attach_asks_for_what_it_asked(asked, same):
    pending = {"instance_uuid": "s", "volume_id": "v", "device": "/dev/vdb", "tag": "data",
               "delete_on_termination": False, "multiattach": False}
    assert attach.same_request(pending, **asked) is same


@pytest.mark.parametrize("device, same", [
    (None, True), ("/dev/sdb", True), ("/dev/vdb", True), ("/dev/vdc", False)])
def test_a_retry_may_name_the_device_its_attach_asked_for(device, same):
    """The compute named the disk /dev/sdb; the attach had asked for /dev/vdb."""
    server = types.SimpleNamespace(uuid="s")
    bdm = types.SimpleNamespace(instance_uuid="s", device_name="/dev/sdb", tag=None,
                                delete_on_termination=False, read_only=False,
                                requested_device="/dev/vdb")
    found = attach.same_attachment(server, [bdm], device=device)
    assert (found is bdm) is same
