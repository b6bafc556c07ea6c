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
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.integration.virt.luks_guest import console_text
from volumesvc.states import power_state
from volumesvc.virt import configdrive, instance_path
from volumesvc_aio import guest_image

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


BOOT_TIMEOUT = 240  # TCG on two shared cores; a quiet machine needs seconds


def test_the_project_guest_runs_user_data_from_the_drive(driver, qemu_host):
    """The starter guest, booted by the driver from a volume, reads the drive and runs user_data.

    The guest's own console says so (what ``os-getConsoleOutput`` shows):
    it found the ``config-2`` CD-ROM, ran the ``#!`` script as root, and the
    script read its server's uuid and the data volume's tag in
    ``meta_data.json``.
    """
    image = guest_image.ensure_image()
    root = _volume(qemu_host.workdir)
    subprocess.run(["cp", "--sparse=always", image, root["data"]["device_path"]], check=True)
    data = _volume(qemu_host.workdir)
    script = (b"#!/bin/sh\n"
              b"meta=/mnt/config/openstack/latest/meta_data.json\n"
              b"echo \"MARKER uid=$(id -u)\"\n"
              b"grep -o '\"uuid\": \"[^\"]*\"' $meta | head -n 1 | sed 's/^/MARKER /'\n"
              b"grep -o '\"tags\": \\[\"[^\"]*\"\\]' $meta | sed 's/^/MARKER /'\n")
    instance = {"uuid": str(uuid.uuid4()), "memory_mb": 256, "vcpus": 1,
                "config_drive": "True", "display_name": "g", "hostname": "g",
                "user_data": base64.b64encode(script).decode()}
    driver.spawn(instance, {"root_device_name": "/dev/sda", "block_device_mapping": [
        {"connection_info": root, "mount_device": "/dev/sda", "boot_index": 0,
         "disk_bus": "scsi", "device_type": "disk"},
        {"connection_info": data, "mount_device": "/dev/sdb", "boot_index": None,
         "disk_bus": "scsi", "device_type": "disk", "tag": "data"}]})
    log = instance_path.console_log(qemu_host.driver.conf, instance["uuid"])
    deadline = time.monotonic() + BOOT_TIMEOUT
    while "VSGUEST user-data rc=" not in console_text(log):
        assert time.monotonic() < deadline, console_text(log)[-3000:]
        time.sleep(0.5)
    text = console_text(log)
    assert "VSGUEST config-drive found=1" in text
    assert "VSGUEST user-data rc=0" in text
    assert "MARKER uid=0\n" in text
    assert f'MARKER "uuid": "{instance["uuid"]}"\n' in text
    assert 'MARKER "tags": ["data"]\n' in text
    driver.destroy(instance)
