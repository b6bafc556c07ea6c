"""Volume drivers at os-brick's boundary: the real factory, doubles for the host calls.

These hosts have no kernel initiators (no iscsid, no FC HBA, no
nvme-fabrics, no NFS server), so the calls that would touch the host
(connect, disconnect, extend) are replaced on the connector class os-brick's
own factory picked; everything above them, from the connection info Cinder
sends to the domain's disk, is the product's code
(doc/source/admin/storage-protocols.rst).
"""

import xml.etree.ElementTree as ET

import pytest
from os_brick.initiator.connectors import iscsi, remotefs

from tests.unit.virt.brick_helpers import CONNECTIONS, VOL, GiB, connection_info
from volumesvc import exception
from volumesvc.virt.libvirt import volume


def _disk(driver, instance):
    root = ET.fromstring(driver.get_domain_xml(instance))
    return {d.findtext("serial"): d for d in root.findall("./devices/disk")}[VOL]


@pytest.mark.parametrize("kind", sorted(CONNECTIONS))
def test_block_protocol_connects_attaches_extends_and_disconnects(
        kind, driver, instance, host_calls):
    cls, data = CONNECTIONS[kind]
    install, device = host_calls
    calls = install(cls)
    info = connection_info(kind, data)
    driver.spawn(instance, None)

    driver.connect_volume(info)
    [(connector, args, _kw)] = calls["connect"].calls
    assert type(connector) is cls  # os-brick's factory chose it for the protocol
    assert args == (data,)  # exactly Cinder's connection data
    assert info["data"]["device_path"] == device  # kept in the BDM's connection_info

    driver.attach_volume(info, instance, "/dev/sdb")
    disk = _disk(driver, instance)
    assert disk.get("type") == "block"
    assert disk.find("source").get("dev") == device
    assert disk.find("driver").get("io") == "native"

    assert driver.extend_volume(info, instance, 2 * GiB) == 2 * GiB
    [(_c, (extend_data,), _kw)] = calls["extend"].calls
    assert extend_data["device_path"] == device

    driver.detach_volume(info, instance, "/dev/sdb")
    driver.disconnect_volume(info)
    [(_c, disconnect_args, _kw)] = calls["disconnect"].calls
    assert disconnect_args == ({**data, "device_path": device}, None)


def test_block_extend_tells_qemu_the_size_os_brick_found(driver, instance, host_calls):
    install, _device = host_calls
    calls = install(iscsi.ISCSIConnector, new_size=3 * GiB)
    info = connection_info("iscsi", CONNECTIONS["iscsi"][1])
    driver.spawn(instance, None)
    driver.connect_volume(info)
    driver.attach_volume(info, instance, "/dev/sdb")
    assert driver.extend_volume(info, instance, 2 * GiB) == 3 * GiB
    assert len(calls["extend"].calls) == 1


def test_block_extend_without_a_size_from_os_brick_fails(driver, instance, host_calls):
    install, _device = host_calls
    install(iscsi.ISCSIConnector, new_size=None)
    info = connection_info("iscsi", CONNECTIONS["iscsi"][1])
    driver.spawn(instance, None)
    driver.connect_volume(info)
    driver.attach_volume(info, instance, "/dev/sdb")
    with pytest.raises(exception.VirtDriverError, match="no new size"):
        driver.extend_volume(info, instance, 2 * GiB)


def test_os_brick_failure_is_a_virt_driver_error(driver, monkeypatch):
    from os_brick import exception as brick_exception

    def fail(connector, data):
        raise brick_exception.VolumeDeviceNotFound(device="/dev/disk/by-path/x")

    monkeypatch.setattr(iscsi.ISCSIConnector, "connect_volume", fail)
    with pytest.raises(exception.VirtDriverError, match="connecting ISCSI volume"):
        driver.connect_volume(connection_info("iscsi", CONNECTIONS["iscsi"][1]))


def test_connectors_follow_the_multipath_and_scan_options(conf):
    conf.set_override("volume_use_multipath", True, group="libvirt")
    conf.set_override("num_volume_scan_tries", 9, group="libvirt")
    drv = volume.VolumeDrivers(conf).get(connection_info("iscsi", {}))
    assert drv.connector.use_multipath is True
    assert drv.connector.device_scan_attempts == 9


def test_nfs_is_mounted_by_os_brick_and_a_file_disk(conf, driver, instance, tmp_path,
                                                    monkeypatch):
    conf.set_override("nfs_mount_point_base", str(tmp_path / "mnt"), group="libvirt")
    conf.set_override("nfs_mount_options", "vers=4.2", group="libvirt")
    mounts = []

    def mount(client, share, flags=None):  # RemoteFsClient.mount runs mount(8)
        mounts.append((client, share, flags))
        target = client.get_mount_point(share)
        (tmp_path / target).mkdir(parents=True, exist_ok=True)
        with open(f"{target}/volume-{VOL}", "wb"):
            pass

    monkeypatch.setattr(remotefs.remotefs.RemoteFsClient, "mount", mount)
    info = connection_info("nfs", {"export": "192.0.2.30:/srv/cinder", "name": f"volume-{VOL}",
                           "options": "-o nconnect=4", "format": "raw"})
    driver.spawn(instance, None)
    driver.connect_volume(info)
    [(client, share, flags)] = mounts
    assert type(driver.volume_drivers.get(info).connector) is remotefs.RemoteFsConnector
    assert share == "192.0.2.30:/srv/cinder" and flags == ["-o", "nconnect=4"]
    assert client._mount_options == "vers=4.2"
    mount_point = client.get_mount_point(share)
    assert mount_point.startswith(str(tmp_path / "mnt") + "/")
    assert info["data"]["device_path"] == f"{mount_point}/volume-{VOL}"

    driver.attach_volume(info, instance, "/dev/sdb")
    disk = _disk(driver, instance)
    assert disk.get("type") == "file"
    assert disk.find("source").get("file") == info["data"]["device_path"]
    assert disk.find("driver").get("type") == "raw"
    # The share's file grows through QEMU (Cinder already grew it on the server).
    assert driver.extend_volume(info, instance, 2 * GiB) == 2 * GiB
    driver.detach_volume(info, instance, "/dev/sdb")
    driver.disconnect_volume(info)  # os-brick leaves the share mounted
    assert len(mounts) == 1


def test_nfs_qcow2_format_reaches_the_disk(conf):
    info = connection_info("nfs", {"export": "h:/e", "name": "v", "format": "qcow2",
                           "device_path": "/mnt/x/v"})
    disk = ET.fromstring(volume.VolumeDrivers(conf).get_config(info, "sdb").to_xml())
    assert disk.find("driver").get("type") == "qcow2"


def _rbd(**data):
    return connection_info("rbd", {
        "name": "volumes/volume-" + VOL, "hosts": ["192.0.2.40", "192.0.2.41"],
        "ports": ["6789", "3300"], "auth_enabled": True,
        "auth_username": "cinder", "secret_type": "ceph",
        "secret_uuid": "11111111-2222-3333-4444-555555555555", **data})


def test_rbd_is_a_network_disk_with_no_host_connection(conf, driver, instance, monkeypatch):
    from os_brick.initiator.connectors import rbd

    def refuse(*args, **kwargs):
        raise AssertionError("RBD volumes are QEMU's, not os-brick's")

    monkeypatch.setattr(rbd.RBDConnector, "connect_volume", refuse)
    info = _rbd()
    driver.spawn(instance, None)
    driver.connect_volume(info)
    assert "device_path" not in info["data"]
    driver.attach_volume(info, instance, "/dev/sdb")
    disk = _disk(driver, instance)
    assert disk.get("type") == "network"
    source = disk.find("source")
    assert (source.get("protocol"), source.get("name")) == ("rbd", "volumes/volume-" + VOL)
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] == [
        ("192.0.2.40", "6789"), ("192.0.2.41", "3300")]
    assert disk.find("auth").get("username") == "cinder"
    assert disk.find("auth/secret").attrib == {
        "type": "ceph", "uuid": "11111111-2222-3333-4444-555555555555"}
    assert driver.extend_volume(info, instance, 2 * GiB) == 2 * GiB
    driver.disconnect_volume(info)


def test_rbd_user_and_secret_from_config_win(conf):
    conf.set_override("rbd_user", "nova", group="libvirt")
    conf.set_override("rbd_secret_uuid", "aaaaaaaa-2222-3333-4444-555555555555",
                      group="libvirt")
    disk = ET.fromstring(volume.VolumeDrivers(conf).get_config(_rbd(), "sdb").to_xml())
    assert disk.find("auth").get("username") == "nova"
    assert disk.find("auth/secret").get("uuid") == "aaaaaaaa-2222-3333-4444-555555555555"


def test_rbd_secret_from_config_when_cinder_sends_none(conf):
    conf.set_override("rbd_secret_uuid", "aaaaaaaa-2222-3333-4444-555555555555",
                      group="libvirt")
    disk = ET.fromstring(volume.VolumeDrivers(conf).get_config(
        _rbd(secret_uuid=None), "sdb").to_xml())
    assert disk.find("auth/secret").get("uuid") == "aaaaaaaa-2222-3333-4444-555555555555"


def test_assisted_snapshot_of_an_rbd_volume_is_refused(driver, instance):
    info = _rbd()
    driver.spawn(instance, None)
    driver.attach_volume(info, instance, "/dev/sdb")
    create_info = {"snapshot_id": "s1", "type": "qcow2", "new_file": "volume-x.s1"}
    with pytest.raises(exception.Invalid, match="RBD disk"):
        driver.volume_snapshot_create(instance, VOL, create_info)
    with pytest.raises(exception.Invalid, match="RBD disk"):
        driver.volume_snapshot_delete(instance, VOL, {"type": "qcow2", "file_to_merge": "f"})


def test_unknown_volume_type_is_a_clear_error(driver, instance):
    with pytest.raises(exception.VolumeDriverNotFound, match="sheepdog"):
        driver.connect_volume({"driver_volume_type": "sheepdog", "data": {}})
