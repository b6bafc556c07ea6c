"""A config drive on real QEMU: the domain the driver defines has the CD-ROM.

What the fake cannot prove: that libvirt accepts the CD-ROM ``<disk>`` the
driver writes (IDE on the default ``pc`` machine, read-only), that QEMU
starts with it, and that the ISO is what a Linux guest finds by label
(``blkid`` reads the label ``config-2`` as the guest's udev does). Runs on
the session's embedded QEMU; fails, never skips, without it.
"""

import base64
import json
import os
import subprocess
import uuid
import xml.etree.ElementTree as ET

import pytest

from volumesvc.virt import configdrive, power_state

pytestmark = pytest.mark.integration

GiB = 1 << 30


@pytest.fixture
def driver(qemu_host):
    yield qemu_host.driver
    for guest in qemu_host.driver.host.list_guests():
        qemu_host.driver.destroy({"uuid": guest.uuid})


def _volume(workdir):
    vol_id = str(uuid.uuid4())
    path = os.path.join(workdir, f"volume-{vol_id}")
    with open(path, "wb") as f:
        f.truncate(GiB)
    return {"driver_volume_type": "local", "data": {"device_path": path}, "serial": vol_id}


def _live_cdroms(driver, instance):
    dom = driver.host.get_connection().lookupByUUIDString(instance["uuid"])
    return [disk for disk in ET.fromstring(dom.XMLDesc(0)).findall("./devices/disk")
            if disk.get("device") == "cdrom"]


def test_spawned_domain_has_the_config_drive_cdrom(driver, qemu_host):
    root, data = _volume(qemu_host.workdir), _volume(qemu_host.workdir)
    script = b"#!/bin/sh\necho ready\n"
    instance = {"uuid": str(uuid.uuid4()), "memory_mb": 64, "vcpus": 1,
                "config_drive": "True", "display_name": "cd", "hostname": "cd",
                "project_id": "p1", "user_data": base64.b64encode(script).decode()}
    driver.spawn(instance, {"root_device_name": "/dev/sda", "block_device_mapping": [
        {"connection_info": root, "mount_device": "/dev/sda", "boot_index": 0,
         "disk_bus": "scsi", "device_type": "disk", "tag": None},
        {"connection_info": data, "mount_device": "/dev/sdb", "boot_index": None,
         "disk_bus": "scsi", "device_type": "disk", "tag": "data"}]})
    assert driver.get_info(instance) == power_state.RUNNING

    (cdrom,) = _live_cdroms(driver, instance)
    iso_path = os.path.join(qemu_host.workdir, "instances", instance["uuid"], "disk.config")
    assert cdrom.find("source").get("file") == iso_path
    assert cdrom.find("target").attrib == {"dev": "hda", "bus": "ide"}
    assert cdrom.find("readonly") is not None
    # libvirt gave the started device an alias and an IDE drive address: QEMU has it.
    assert cdrom.find("alias") is not None
    assert cdrom.find("address").get("type") == "drive"

    label = subprocess.run(["blkid", "-o", "value", "-s", "LABEL", iso_path],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert label == "config-2"
    found_label, files = configdrive.read_iso(iso_path)
    assert found_label == "config-2"
    assert files["openstack/latest/user_data"] == script
    meta = json.loads(files["openstack/latest/meta_data.json"])
    assert meta["uuid"] == instance["uuid"]
    assert meta["devices"] == [{"type": "disk", "bus": "scsi", "serial": data["serial"],
                                "address": "0:0:0:1", "tags": ["data"]}]

    # A start defines the domain again: the drive is written again and attached.
    driver.power_off(instance)
    os.remove(iso_path)
    driver.power_on(instance, {"root_device_name": "/dev/sda", "block_device_mapping": [
        {"connection_info": root, "mount_device": "/dev/sda", "boot_index": 0,
         "disk_bus": "scsi", "device_type": "disk"}]})
    assert driver.get_info(instance) == power_state.RUNNING
    assert len(_live_cdroms(driver, instance)) == 1
    assert json.loads(configdrive.read_iso(iso_path)[1][
        "openstack/latest/meta_data.json"])["devices"] == []
    driver.destroy(instance)
