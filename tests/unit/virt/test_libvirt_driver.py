"""LibvirtDriver logic, run for real against the fake libvirt binding."""

import os
import threading
import uuid
import xml.etree.ElementTree as ET

import pytest

from volumesvc import exception
from volumesvc.states import power_state
from volumesvc.virt import fake
from volumesvc.virt.libvirt import config


def _bdi(*bdms):
    return {"root_device_name": bdms[0]["mount_device"] if bdms else None,
            "block_device_mapping": list(bdms)}


def _bdm(connection_info, dev, boot_index=None, bus="scsi"):
    return {"connection_info": connection_info, "mount_device": dev,
            "boot_index": boot_index, "disk_bus": bus, "device_type": "disk"}


def _xml_disks(driver, instance, inactive=False):
    """(target dev, serial) of each disk in the domain XML, read from libvirt itself.

    Deliberately not through the driver's own disk lookup, so a detach that
    does nothing cannot hide behind a lookup that finds nothing.
    """
    dom = driver.host.get_connection().lookupByUUIDString(instance["uuid"])
    xml = dom.XMLDesc(fake.VIR_DOMAIN_XML_INACTIVE if inactive else 0)
    return {(disk.find("target").get("dev"), disk.findtext("serial"))
            for disk in ET.fromstring(xml).iter("disk")}


def _other_instance():
    return {"uuid": str(uuid.uuid4())}


def test_capabilities(driver):
    assert driver.capabilities == {"supports_multiattach": True, "supports_extend_volume": True,
                                   "supports_tagged_attach_volume": True}


def test_spawn_with_boot_volume(driver, instance, make_volume):
    root, data = make_volume(), make_volume()
    driver.spawn(instance, _bdi(_bdm(data, "/dev/sdb"), _bdm(root, "/dev/sda", boot_index=0)))
    assert driver.get_info(instance) == power_state.RUNNING
    assert driver.list_instance_uuids() == [instance["uuid"]]
    disks = config.parse_disks(driver.get_domain_xml(instance))
    assert [(d.target_dev, d.serial) for d in disks] == [("sda", root["serial"]),
                                                         ("sdb", data["serial"])]
    assert f"instance-{instance['uuid']}" in driver.get_domain_xml(instance)


def test_spawn_uses_instance_name_and_memory_option(driver, conf, instance):
    conf.set_override("guest_memory_cap_mb", 0, group="libvirt")
    instance.update(instance_name="instance-00000001", memory_mb=128)
    driver.spawn(instance, None)
    xml = driver.get_domain_xml(instance)
    assert "<name>instance-00000001</name>" in xml and ">131072<" in xml


def test_guest_memory_is_the_flavors_up_to_the_cap(driver, conf, instance):
    """The domain gets the flavor's ram (not a fixed size), at most guest_memory_cap_mb."""
    instance.update(memory_mb=2048)
    conf.set_override("guest_memory_cap_mb", 64, group="libvirt")
    driver.spawn(instance, None)
    assert ">65536<" in driver.get_domain_xml(instance)
    driver.destroy(instance)
    conf.set_override("guest_memory_cap_mb", 0, group="libvirt")
    driver.spawn(instance, None)
    assert ">2097152<" in driver.get_domain_xml(instance)


def test_spawn_twice_is_instance_exists(driver, instance):
    driver.spawn(instance, None)
    with pytest.raises(exception.InstanceExists):
        driver.spawn(instance, None)


def test_failed_spawn_leaves_nothing_defined(driver, instance, make_volume, tmp_path):
    vol = make_volume()
    os.unlink(vol["data"]["device_path"])  # QEMU cannot open it
    with pytest.raises(exception.VirtDriverError):
        driver.spawn(instance, _bdi(_bdm(vol, "/dev/sda", boot_index=0)))
    assert driver.list_instance_uuids() == []


def test_get_info_of_unknown_instance(driver, instance):
    with pytest.raises(exception.InstanceNotFound):
        driver.get_info(instance)


def test_attach_live_and_persistent_then_detach(driver, instance, make_volume):
    driver.spawn(instance, None)
    vol = make_volume()
    assert driver.attach_volume(vol, instance, "/dev/sdb") == "/dev/sdb"
    live = driver.get_volume_disk_info(instance, vol["serial"])
    persistent = driver.get_volume_disk_info(instance, vol["serial"], inactive=True)
    assert live.source == vol["data"]["device_path"] and live.alias == "ua-" + vol["serial"]
    assert persistent is not None
    driver.detach_volume(vol, instance, "/dev/sdb")
    assert driver.get_volume_disk_info(instance, vol["serial"]) is None
    assert driver.get_volume_disk_info(instance, vol["serial"], inactive=True) is None


def test_attach_picks_the_next_free_name(driver, instance, make_volume):
    driver.spawn(instance, _bdi(_bdm(make_volume(), "/dev/sda", boot_index=0)))
    assert driver.attach_volume(make_volume(), instance, None) == "/dev/sdb"
    assert driver.attach_volume(make_volume(), instance, None, disk_bus="virtio") == "/dev/vda"


def test_attach_to_stopped_domain_is_persistent_only(driver, instance, make_volume):
    driver.spawn(instance, None)
    driver.host.get_guest(instance["uuid"]).poweroff()
    assert driver.get_info(instance) == power_state.SHUTDOWN
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/sdb")
    assert driver.get_volume_disk_info(instance, vol["serial"], inactive=True) is not None
    # ...and the disk comes up with the domain on the next start.
    driver.reboot(instance, _bdi(_bdm(vol, "/dev/sdb")), "HARD")
    assert driver.get_volume_disk_info(instance, vol["serial"]).target_dev == "sdb"


def test_same_file_on_two_domains_needs_multiattach(driver, instance, make_volume):
    other = _other_instance()
    driver.spawn(instance, None)
    driver.spawn(other, None)
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/sdb")
    with pytest.raises(exception.VirtDriverError, match='"write" lock'):
        driver.attach_volume(vol, other, "/dev/sdb")
    # Nothing was left half-attached on the refused side.
    assert driver.get_volume_disk_info(other, vol["serial"], inactive=True) is None


def test_multiattach_volume_is_shared(driver, instance, make_volume):
    other = _other_instance()
    driver.spawn(instance, None)
    driver.spawn(other, None)
    vol = make_volume(multiattach=True)
    driver.attach_volume(vol, instance, "/dev/sdb")
    driver.attach_volume(vol, other, "/dev/sdc")
    for inst in (instance, other):
        disk = driver.get_volume_disk_info(inst, vol["serial"])
        assert disk.shareable and disk.cache == "none"


def test_spawn_refused_when_boot_volume_is_held_elsewhere(driver, instance, make_volume):
    vol = make_volume()
    driver.spawn(_other_instance(), _bdi(_bdm(vol, "/dev/sda", boot_index=0)))
    with pytest.raises(exception.VirtDriverError):
        driver.spawn(instance, _bdi(_bdm(vol, "/dev/sda", boot_index=0)))


def test_no_multiattach_driver_refuses(conf, fake_libvirt, instance, make_volume):
    conf.set_override("disabled_capabilities", ["supports_multiattach"], group="virt")
    drv = fake.FakeDriver(conf, libvirt_module=fake_libvirt)
    assert drv.capabilities["supports_multiattach"] is False
    assert drv.capabilities["supports_extend_volume"] is True
    vol = make_volume(multiattach=True)
    with pytest.raises(exception.MultiattachNotSupportedByVirtDriver):
        drv.spawn(instance, _bdi(_bdm(vol, "/dev/sda", boot_index=0)))
    drv.spawn(instance, None)
    with pytest.raises(exception.MultiattachNotSupportedByVirtDriver):
        drv.attach_volume(vol, instance, "/dev/sdb")
    drv.attach_volume(make_volume(), instance, "/dev/sdb")  # plain volumes still work
    drv.destroy(instance)


def test_detach_of_missing_disk_or_domain_is_quiet(driver, instance, make_volume):
    vol = make_volume()
    driver.detach_volume(vol, instance, "/dev/sdb")  # no domain
    # ...and it did not create one.
    assert driver.list_instance_uuids() == []
    boot = make_volume()
    driver.spawn(instance, _bdi(_bdm(boot, "/dev/sda", boot_index=0)))
    driver.detach_volume(vol, instance, "/dev/sdb")  # no disk
    # The domain runs on, with its boot disk untouched in both definitions.
    assert driver.get_info(instance) == power_state.RUNNING
    expected = {("sda", boot["serial"])}
    assert _xml_disks(driver, instance) == expected
    assert _xml_disks(driver, instance, inactive=True) == expected


def test_detach_finds_the_disk_by_alias_not_mountpoint(driver, instance, make_volume):
    driver.spawn(instance, None)
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/sdc")
    disk = ("sdc", vol["serial"])
    assert disk in _xml_disks(driver, instance)
    assert disk in _xml_disks(driver, instance, inactive=True)
    driver.detach_volume(vol, instance, "/dev/sdq")
    assert _xml_disks(driver, instance) == set()
    assert _xml_disks(driver, instance, inactive=True) == set()


def test_detach_releases_the_lock(driver, instance, make_volume):
    other = _other_instance()
    driver.spawn(instance, None)
    driver.spawn(other, None)
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/sdb")
    driver.detach_volume(vol, instance, "/dev/sdb")
    driver.attach_volume(vol, other, "/dev/sdb")
    # The volume moved: in the other domain's XML (live and persistent), not the first's.
    assert _xml_disks(driver, other) == {("sdb", vol["serial"])}
    assert _xml_disks(driver, other, inactive=True) == {("sdb", vol["serial"])}
    assert _xml_disks(driver, instance) == set()
    assert driver.get_volume_disk_info(other, vol["serial"]).source == \
        vol["data"]["device_path"]


def test_live_virtio_detach_times_out_without_guest(driver, instance, make_volume):
    driver.spawn(instance, None)
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/vdb", disk_bus="virtio")
    with pytest.raises(exception.DeviceDetachFailed, match="still attached after 2 requests"):
        driver.detach_volume(vol, instance, "/dev/vdb")
    # The persistent part is gone already; a reset completes the unplug.
    assert driver.get_volume_disk_info(instance, vol["serial"], inactive=True) is None
    driver.reboot(instance, None, "SOFT")
    assert driver.get_volume_disk_info(instance, vol["serial"]) is None


def _virtio_attached(driver, instance, make_volume, fake_libvirt):
    """A running domain with a virtio volume (whose unplug waits for a guest): (volume, domain)."""
    driver.spawn(instance, None)
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/vdb", disk_bus="virtio")
    return vol, fake_libvirt.opened[0].lookupByUUIDString(instance["uuid"])


def test_live_detach_asks_again_and_a_guest_that_answers_late_lets_go(
        driver, instance, make_volume, fake_libvirt, caplog):
    """The guest answers after the first wait (1 s here): the second request's wait sees it."""
    vol, domain = _virtio_attached(driver, instance, make_volume, fake_libvirt)
    late = threading.Timer(1.5, domain.reset)  # the fake guest's answer to the unplug
    late.start()
    try:
        driver.detach_volume(vol, instance, "/dev/vdb")
    finally:
        late.cancel()
    assert driver.get_volume_disk_info(instance, vol["serial"]) is None
    assert driver.get_volume_disk_info(instance, vol["serial"], inactive=True) is None
    assert "after detach request 1 of 2; asking the guest again" in caplog.text


def test_a_qemu_that_refuses_a_second_unplug_request_keeps_the_first_waiting(
        driver, instance, make_volume, fake_libvirt, monkeypatch):
    """Some QEMU releases refuse a device_del while one is pending: not the detach's answer."""
    vol, domain = _virtio_attached(driver, instance, make_volume, fake_libvirt)
    requests = []
    accept = domain.detachDeviceFlags

    def detach(xml, flags=0):
        requests.append(flags)
        if len(requests) > 2:  # config, then live; then the live request again
            threading.Timer(0.5, domain.reset).start()  # the guest answers the first
            raise fake.libvirtError(
                "internal error: unable to execute QEMU command 'device_del': Device "
                "ua-x is already in the process of unplug", fake.VIR_ERR_INTERNAL_ERROR)
        return accept(xml, flags)

    monkeypatch.setattr(domain, "detachDeviceFlags", detach)
    driver.detach_volume(vol, instance, "/dev/vdb")
    assert len(requests) == 3
    assert driver.get_volume_disk_info(instance, vol["serial"]) is None


def test_detach_from_stopped_domain(driver, instance, make_volume):
    root, data = make_volume(), make_volume()
    driver.spawn(instance, _bdi(_bdm(root, "/dev/sda", boot_index=0), _bdm(data, "/dev/sdb")))
    driver.host.get_guest(instance["uuid"]).poweroff()
    both = {("sda", root["serial"]), ("sdb", data["serial"])}
    assert _xml_disks(driver, instance, inactive=True) == both
    driver.detach_volume(data, instance, "/dev/sdb")
    # Only that disk goes, from the definition the next start uses.
    assert _xml_disks(driver, instance, inactive=True) == {("sda", root["serial"])}
    assert driver.get_volume_disk_info(instance, data["serial"]) is None


def test_extend_running_uses_block_resize(driver, instance, make_volume):
    driver.spawn(instance, None)
    vol = make_volume(size=1 << 30)
    driver.attach_volume(vol, instance, "/dev/sdb")
    assert driver.extend_volume(vol, instance, 2 << 30) == 2 << 30
    assert os.path.getsize(vol["data"]["device_path"]) == 2 << 30


def test_extend_paused_domain(driver, instance, make_volume):
    driver.spawn(instance, None)
    vol = make_volume(size=1 << 30)
    driver.attach_volume(vol, instance, "/dev/sdb")
    driver.host.get_connection().lookupByUUIDString(instance["uuid"]).suspend()
    assert driver.get_info(instance) == power_state.PAUSED
    assert driver.extend_volume(vol, instance, 3 << 30) == 3 << 30


def test_extend_stopped_domain_grows_the_file(driver, instance, make_volume):
    vol = make_volume(size=1 << 30)
    driver.spawn(instance, _bdi(_bdm(vol, "/dev/sdb")))
    driver.host.get_guest(instance["uuid"]).poweroff()
    assert driver.extend_volume(vol, instance, 2 << 30) == 2 << 30
    assert os.path.getsize(vol["data"]["device_path"]) == 2 << 30


def test_extend_unknown_volume(driver, instance, make_volume):
    driver.spawn(instance, None)
    with pytest.raises(exception.DiskNotFound):
        driver.extend_volume(make_volume(), instance, 2 << 30)


def test_extend_disabled(conf, fake_libvirt, instance, make_volume):
    conf.set_override("disabled_capabilities", ["supports_extend_volume"], group="virt")
    drv = fake.FakeDriver(conf, libvirt_module=fake_libvirt)
    with pytest.raises(exception.ExtendVolumeNotSupported):
        drv.extend_volume(make_volume(), instance, 2 << 30)


def test_soft_reboot_keeps_live_disks(driver, instance, make_volume):
    driver.spawn(instance, None)
    vol = make_volume()
    driver.attach_volume(vol, instance, "/dev/sdb")
    driver.reboot(instance, None, "SOFT")
    assert driver.get_info(instance) == power_state.RUNNING
    assert driver.get_volume_disk_info(instance, vol["serial"]) is not None


def test_hard_reboot_rebuilds_disks_from_block_device_info(driver, instance, make_volume):
    kept, dangling = make_volume(), make_volume()
    driver.spawn(instance, _bdi(_bdm(kept, "/dev/sda", boot_index=0)))
    driver.attach_volume(dangling, instance, "/dev/sdb")
    driver.reboot(instance, _bdi(_bdm(kept, "/dev/sda", boot_index=0)), "HARD")
    assert driver.get_info(instance) == power_state.RUNNING
    assert driver.get_volume_disk_info(instance, kept["serial"]) is not None
    assert driver.get_volume_disk_info(instance, dangling["serial"]) is None
    assert driver.get_volume_disk_info(instance, dangling["serial"], inactive=True) is None


def test_soft_reboot_of_stopped_domain_starts_it(driver, instance):
    driver.spawn(instance, None)
    driver.host.get_guest(instance["uuid"]).poweroff()
    driver.reboot(instance, None, "SOFT")
    assert driver.get_info(instance) == power_state.RUNNING


def test_destroy_releases_volumes_and_is_idempotent(driver, instance, make_volume):
    vol = make_volume()
    driver.spawn(instance, _bdi(_bdm(vol, "/dev/sda", boot_index=0)))
    driver.destroy(instance)
    driver.destroy(instance)
    assert driver.list_instance_uuids() == []
    driver.spawn(_other_instance(), _bdi(_bdm(vol, "/dev/sda", boot_index=0)))


def test_reconnects_after_the_connection_is_lost(driver, fake_libvirt, instance):
    driver.spawn(instance, None)
    fake_libvirt.opened[-1].close()
    assert driver.get_info(instance) == power_state.RUNNING
    assert len(fake_libvirt.opened) == 2


def test_hard_reboot_recreates_a_missing_domain(driver, instance, make_volume):
    vol = make_volume()
    driver.reboot(instance, _bdi(_bdm(vol, "/dev/sda", boot_index=0)), "HARD")
    assert driver.get_info(instance) == power_state.RUNNING
    assert driver.get_volume_disk_info(instance, vol["serial"]).target_dev == "sda"


def test_soft_reboot_of_missing_domain(driver, instance):
    with pytest.raises(exception.InstanceNotFound):
        driver.reboot(instance, None, "SOFT")


def _live_source(driver, instance, target_dev):
    dom = driver.host.get_connection().lookupByUUIDString(instance["uuid"])
    for disk in ET.fromstring(dom.XMLDesc(0)).iter("disk"):
        if disk.find("target").get("dev") == target_dev:
            return disk.find("source").get("file")
    return None


def test_swap_onto_a_larger_volume_grows_the_disk_before_the_copy(driver, instance,
                                                                  make_volume):
    """Regression: QEMU mirrors only between disks of one size.

    The disk used to be grown after the pivot, so a copy into a larger
    volume (Cinder's new volume of another size or backend) was refused by
    QEMU ("Source and target image have different sizes") and every such
    swap rolled back. The fake refuses that copy as QEMU does.
    """
    old, new = make_volume(size=1 << 30), make_volume(size=2 << 30)
    driver.spawn(instance, None)
    driver.attach_volume(old, instance, "/dev/sdb")
    driver.swap_volume(old, new, instance, "/dev/sdb", resize_to_bytes=2 << 30)
    assert _live_source(driver, instance, "sdb") == new["data"]["device_path"]
    assert driver.host.get_guest(instance["uuid"]).block_capacity("sdb") == 2 << 30


def test_swap_onto_a_volume_of_the_same_size_does_not_resize(driver, instance, make_volume):
    old, new = make_volume(size=1 << 30), make_volume(size=1 << 30)
    driver.spawn(instance, None)
    driver.attach_volume(old, instance, "/dev/sdb")
    driver.swap_volume(old, new, instance, "/dev/sdb", resize_to_bytes=1 << 30)
    assert _live_source(driver, instance, "sdb") == new["data"]["device_path"]
    assert os.path.getsize(old["data"]["device_path"]) == 1 << 30


def test_swap_onto_a_smaller_volume_fails_and_keeps_the_old_one(driver, instance,
                                                                make_volume):
    old, new = make_volume(size=2 << 30), make_volume(size=1 << 30)
    driver.spawn(instance, None)
    driver.attach_volume(old, instance, "/dev/sdb")
    with pytest.raises(exception.VolumesvcException, match="different sizes"):
        driver.swap_volume(old, new, instance, "/dev/sdb", resize_to_bytes=1 << 30)
    assert _live_source(driver, instance, "sdb") == old["data"]["device_path"]
    guest = driver.host.get_guest(instance["uuid"])
    assert not guest.block_job_info("sdb")


@pytest.mark.parametrize(("mib", "params"), [(0, {}), (8, {"bandwidth": 8 << 20})])
def test_swap_copy_bandwidth_comes_from_the_option(driver, conf, instance, make_volume,
                                                   mib, params):
    conf.set_override("block_copy_bandwidth", mib, group="libvirt")
    old, new = make_volume(size=1 << 30), make_volume(size=1 << 30)
    driver.spawn(instance, None)
    driver.attach_volume(old, instance, "/dev/sdb")
    driver.swap_volume(old, new, instance, "/dev/sdb", resize_to_bytes=1 << 30)
    dom = driver.host.get_connection().lookupByUUIDString(instance["uuid"])
    assert dom.copy_params["sdb"] == params


def test_swap_moves_the_data_and_the_holes_of_the_disk(driver, instance, make_volume):
    """The fake's copy touches only data, yet the new volume ends byte-identical."""
    old, new = make_volume(size=64 << 20), make_volume(size=64 << 20)
    with open(old["data"]["device_path"], "r+b") as f:
        f.seek(40 << 20)
        f.write(b"old data" * 1000)
    with open(new["data"]["device_path"], "r+b") as f:
        f.write(b"stale bytes in the new volume" * 1000)  # where the old one has a hole
    driver.spawn(instance, None)
    driver.attach_volume(old, instance, "/dev/sdb")
    driver.swap_volume(old, new, instance, "/dev/sdb", resize_to_bytes=64 << 20)
    with open(old["data"]["device_path"], "rb") as a, open(new["data"]["device_path"], "rb") as b:
        assert a.read() == b.read()
