"""Disk and domain XML: each rule of doc/source/contributor/contract.rst §13, on the XML."""

import os
import stat
import xml.etree.ElementTree as ET

import pytest

from volumesvc import exception
from volumesvc.virt.libvirt import config, volume
from volumesvc.virt.libvirt.volume import local

VOL = "5f0a7e3c-8a4e-4d53-9d1e-0c6f3b1c2a11"


def _disk(conf, connection_info, mountpoint="/dev/sdb", **kwargs):
    cfg = volume.VolumeDrivers(conf).get_config(connection_info, mountpoint, **kwargs)
    return cfg, ET.fromstring(cfg.to_xml())


def _local(path, **extra):
    info = {"driver_volume_type": "local", "data": {"device_path": str(path)}, "serial": VOL}
    info.update(extra)
    return info


def _iscsi(**data):
    """An iSCSI volume os-brick has connected (``device_path`` is its answer)."""
    return {"driver_volume_type": "iscsi", "serial": VOL,
            "data": {"target_portal": "10.0.0.1:3260",
                     "target_iqn": "iqn.2010-10.org.openstack:volume-" + VOL,
                     "target_lun": 1, "device_path": "/dev/sdz", **data}}


def test_local_file_volume(conf, tmp_path):
    path = tmp_path / "vol"
    path.write_bytes(b"")
    cfg, disk = _disk(conf, _local(path))
    assert disk.get("type") == "file" and disk.get("device") == "disk"
    assert disk.find("source").get("file") == str(path)
    driver = disk.find("driver")
    assert (driver.get("name"), driver.get("type"), driver.get("cache")) == ("qemu", "raw", "none")
    assert driver.get("io") is None  # io=native is for block-type sources only
    assert disk.find("serial").text == VOL
    assert disk.find("alias").get("name") == "ua-" + VOL
    assert disk.find("target").attrib == {"dev": "sdb", "bus": "scsi"}
    address = disk.find("address")
    assert (address.get("type"), address.get("controller"), address.get("unit")) == \
        ("drive", "0", "1")
    assert disk.find("shareable") is None and disk.find("readonly") is None


def test_local_block_device_is_block_type(conf, monkeypatch):
    # NOTE: a real block device cannot be assumed on a test machine; only the
    # stat of the device path is faked.
    block_stat = os.stat_result((stat.S_IFBLK | 0o600,) + (0,) * 9)
    monkeypatch.setattr(local.os, "stat", lambda path: block_stat)
    _cfg, disk = _disk(conf, _local("/dev/sdz"))
    assert disk.get("type") == "block"
    assert disk.find("source").get("dev") == "/dev/sdz"
    assert disk.find("driver").get("io") == "native"


def test_local_missing_path_is_file_type(conf, tmp_path):
    _cfg, disk = _disk(conf, _local(tmp_path / "not-yet"))
    assert disk.get("type") == "file"


def test_iscsi_with_device_path(conf):
    _cfg, disk = _disk(conf, _iscsi(device_path="/dev/sdz"))
    assert disk.get("type") == "block"
    assert disk.find("source").get("dev") == "/dev/sdz"


def test_iscsi_never_connected_is_refused(conf):
    # It used to write the by-path name os-brick would have made, for a
    # target nobody had logged in to.
    info = _iscsi()
    del info["data"]["device_path"]
    with pytest.raises(exception.Invalid, match="not connected"):
        _disk(conf, info)


def test_virtio_bus_has_no_drive_address(conf):
    _cfg, disk = _disk(conf, _iscsi(), mountpoint="/dev/vdb", disk_bus="virtio")
    assert disk.find("target").attrib == {"dev": "vdb", "bus": "virtio"}
    assert disk.find("address") is None  # only scsi disks get a drive address
    assert disk.find("driver").get("io") == "native"
    assert disk.find("driver").get("cache") == "none"


def test_block_io_native_can_be_left_to_qemu(conf):
    conf.set_override("use_default_aio_mode_for_volumes", True, group="libvirt")
    _cfg, disk = _disk(conf, _iscsi())
    assert disk.find("driver").get("io") is None


@pytest.mark.parametrize("mode,io", [("writeback", "threads"), ("writethrough", "threads"),
                                     ("unsafe", "threads"), ("directsync", "native"),
                                     ("none", "native")])
def test_cache_mode_from_config_and_io_fallback(conf, mode, io):
    conf.set_override("disk_cachemodes", [f"block={mode}"], group="libvirt")
    _cfg, disk = _disk(conf, _iscsi())
    assert disk.find("driver").get("cache") == mode
    assert disk.find("driver").get("io") == io


def test_cache_mode_is_per_source_type(conf, tmp_path):
    conf.set_override("disk_cachemodes", ["block=writeback"], group="libvirt")
    path = tmp_path / "vol"
    path.write_bytes(b"")
    _cfg, disk = _disk(conf, _local(path))
    assert disk.find("driver").get("cache") == "none"


def test_multiattach_is_shareable_and_forces_cache_none(conf):
    conf.set_override("disk_cachemodes", ["block=writeback", "file=unsafe"], group="libvirt")
    _cfg, disk = _disk(conf, dict(_iscsi(), multiattach=True))
    assert disk.find("shareable") is not None
    assert disk.find("driver").get("cache") == "none"
    assert disk.find("driver").get("io") == "native"


def test_read_only_access_mode(conf):
    _cfg, disk = _disk(conf, _iscsi(access_mode="ro"))
    assert disk.find("readonly") is not None
    _cfg, disk = _disk(conf, _iscsi(access_mode="rw"))
    assert disk.find("readonly") is None


def _rbd(**data):
    return {"driver_volume_type": "rbd", "serial": VOL,
            "data": {"name": "volumes/volume-" + VOL, "hosts": ["10.0.0.2"],
                     "ports": ["6789"], **data}}


def _nfs(**data):
    return {"driver_volume_type": "nfs", "serial": VOL,
            "data": {"export": "10.0.0.3:/srv", "name": "volume-" + VOL,
                     "device_path": "/mnt/x/volume-" + VOL, **data}}


@pytest.mark.parametrize("make", [_iscsi, _rbd, _nfs], ids=["block", "network", "file"])
def test_read_only_attachment_is_read_only_on_every_source_type(conf, make):
    """A ``mode='ro'`` attachment: Cinder 29 still says ``access_mode: rw``.

    Its connection info gets the attachment's ``attach_mode``; that alone
    must give a read-only disk, or the guest could write a volume it was
    given read-only.
    """
    _cfg, disk = _disk(conf, dict(make(access_mode="rw"), attach_mode="ro"))
    assert disk.find("readonly") is not None
    _cfg, disk = _disk(conf, dict(make(access_mode="ro"), attach_mode="rw"))
    assert disk.find("readonly") is not None
    _cfg, disk = _disk(conf, dict(make(access_mode="rw"), attach_mode="rw"))
    assert disk.find("readonly") is None


def test_discard_unmap(conf):
    _cfg, disk = _disk(conf, _iscsi(discard=True))
    assert disk.find("driver").get("discard") == "unmap"
    _cfg, disk = _disk(conf, _iscsi())
    assert disk.find("driver").get("discard") is None


@pytest.mark.parametrize("device", ["disk", "cdrom", "lun"])
def test_device_type_and_lun_has_no_serial(conf, device):
    _cfg, disk = _disk(conf, _iscsi(), device_type=device)
    assert disk.get("device") == device
    assert (disk.find("serial") is None) == (device == "lun")
    assert disk.find("alias").get("name") == "ua-" + VOL


def test_volume_id_from_data_when_no_serial(conf):
    info = _iscsi(volume_id="abc")
    del info["serial"]
    _cfg, disk = _disk(conf, info)
    assert disk.find("serial").text == "abc"
    assert disk.find("alias").get("name") == "ua-abc"


def test_rbd_network_disk_with_auth(conf):
    info = {"driver_volume_type": "rbd", "serial": VOL,
            "data": {"name": "volumes/volume-" + VOL, "hosts": ["10.0.0.1", "10.0.0.2"],
                     "ports": ["6789", "6789"], "auth_enabled": True,
                     "auth_username": "cinder", "secret_type": "ceph",
                     "secret_uuid": "11111111-2222-3333-4444-555555555555"}}
    _cfg, disk = _disk(conf, info)
    assert disk.get("type") == "network"
    source = disk.find("source")
    assert (source.get("protocol"), source.get("name")) == ("rbd", "volumes/volume-" + VOL)
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] == [
        ("10.0.0.1", "6789"), ("10.0.0.2", "6789")]
    auth = disk.find("auth")
    assert auth.get("username") == "cinder"
    assert auth.find("secret").attrib == {"type": "ceph",
                                          "uuid": "11111111-2222-3333-4444-555555555555"}
    assert disk.find("driver").get("io") is None


def test_rbd_without_auth(conf):
    info = {"driver_volume_type": "rbd", "serial": VOL,
            "data": {"name": "p/v", "hosts": ["h"], "ports": ["1"], "auth_enabled": False}}
    _cfg, disk = _disk(conf, info)
    assert disk.find("auth") is None


def test_rbd_auth_without_secret_uuid_is_invalid(conf):
    # It used to build a <secret uuid=None> that ElementTree refused to write
    # (a TypeError from the attach).
    info = {"driver_volume_type": "rbd", "serial": VOL,
            "data": {"name": "p/v", "hosts": ["h"], "ports": ["1"], "auth_enabled": True,
                     "auth_username": "cinder"}}
    with pytest.raises(exception.Invalid, match="secret_uuid"):
        _disk(conf, info)


def test_attributes_left_none_are_not_written():
    disk = config.DiskConfig(source_type="network", source_protocol="rbd", source_name="p/v",
                             source_hosts=[("h", None)], auth_username="cinder",
                             auth_secret_type="ceph")
    element = ET.fromstring(disk.to_xml())
    assert element.find("source/host").attrib == {"name": "h"}
    assert element.find("auth/secret").attrib == {"type": "ceph"}
    assert element.find("driver").attrib == {"name": "qemu", "type": "raw"}


def test_iotune_from_qos_specs(conf):
    _cfg, disk = _disk(conf, _iscsi(qos_specs={"total_iops_sec": 100, "consumer": "front-end"}))
    assert [(e.tag, e.text) for e in disk.find("iotune")] == [("total_iops_sec", "100")]


def test_unknown_driver_volume_type(conf):
    with pytest.raises(exception.VolumeDriverNotFound):
        volume.VolumeDrivers(conf).get_config({"driver_volume_type": "sheepdog", "data": {}},
                                              "sdb")


def test_local_without_device_path(conf):
    with pytest.raises(exception.Invalid):
        volume.VolumeDrivers(conf).get_config({"driver_volume_type": "local", "data": {}},
                                              "sdb")


@pytest.mark.parametrize("bad", ["writeback", "file=fast", "tape=none"])
def test_bad_cache_modes_are_config_errors(bad):
    with pytest.raises(exception.ConfigInvalid):
        volume.parse_cache_modes([bad])


def test_domain_xml():
    disk = config.DiskConfig(source_path="/x", target_dev="sda", serial=VOL,
                             alias="ua-" + VOL, boot_order=1, scsi_unit=0)
    dom = ET.fromstring(config.DomainConfig(uuid="u-1", name="instance-1", virt_type="kvm",
                                            memory_mb=64, vcpus=2, disks=[disk]).to_xml())
    assert dom.get("type") == "kvm"
    assert dom.find("name").text == "instance-1" and dom.find("uuid").text == "u-1"
    assert dom.find("memory").attrib == {"unit": "KiB"} and dom.find("memory").text == "65536"
    assert dom.find("vcpu").text == "2"
    assert dom.find("features/acpi") is not None
    assert dom.find("devices/controller").attrib == {"type": "scsi", "index": "0",
                                                     "model": "virtio-scsi"}
    assert dom.find("devices/disk/boot").get("order") == "1"


def test_parse_disks_round_trip(conf):
    cfg = volume.VolumeDrivers(conf).get_config(
        dict(_iscsi(access_mode="ro"), multiattach=True), "sdc")
    dom = config.DomainConfig(uuid="u", name="n", disks=[cfg]).to_xml()
    [info] = config.parse_disks(dom)
    assert (info.target_dev, info.target_bus, info.serial, info.alias) == (
        "sdc", "scsi", VOL, "ua-" + VOL)
    assert info.shareable and info.readonly and info.cache == "none"
    assert info.xml.startswith("<disk") and info.xml.endswith("</disk>")
