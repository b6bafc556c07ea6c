"""A real Cinder volume, attached with the compute's connector, hot-plugged into QEMU.

The whole data path of the single-machine setup: the volume is created in
Cinder 29 through our adapter, the attachment is made with the connector
the libvirt driver reports, the `local` connection info names the volume's
real file, and that file becomes a disk of a running QEMU domain (serial =
volume id) until it is detached again.
"""

import os
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.integration.fixtures_openstack import wait_volume_status

GiB = 1 << 30


@pytest.fixture
def libvirt_driver(qemu_host):
    return qemu_host.driver


def _disks(drv, instance):
    dom = drv.host.get_connection().lookupByUUIDString(instance["uuid"])
    root = ET.fromstring(dom.XMLDesc(0))
    return {d.findtext("serial"): d for d in root.findall("./devices/disk")}


def test_cinder_volume_hotplugged_into_a_running_domain(libvirt_driver, cinder_api, cinder_ctx):
    ctx = cinder_ctx
    volume = cinder_api.create(ctx, 1, "hotplug", "integration")
    wait_volume_status(cinder_api, ctx, volume["id"], "available")
    instance = {"uuid": str(uuid.uuid4()), "memory_mb": 64, "vcpus": 1}
    libvirt_driver.spawn(instance, None)
    try:
        connector = libvirt_driver.get_volume_connector()
        assert connector["host"] == "it-qemu"
        attachment = cinder_api.attachment_create(ctx, volume["id"], instance["uuid"])
        connection_info = cinder_api.attachment_update(
            ctx, attachment["id"], connector, mountpoint="/dev/sdb")
        assert connection_info["driver_volume_type"] == "local"
        path = connection_info["data"]["device_path"]
        assert os.path.isfile(path) and os.path.getsize(path) == GiB
        connection_info["serial"] = volume["id"]

        device = libvirt_driver.attach_volume(connection_info, instance, "/dev/sdb")
        cinder_api.attachment_complete(ctx, attachment["id"])
        wait_volume_status(cinder_api, ctx, volume["id"], "in-use")
        assert device == "/dev/sdb"
        disk = _disks(libvirt_driver, instance)[volume["id"]]
        assert disk.find("source").get("file") == path
        assert disk.find("target").get("dev") == "sdb"

        libvirt_driver.detach_volume(connection_info, instance, device)
        assert volume["id"] not in _disks(libvirt_driver, instance)
        cinder_api.attachment_delete(ctx, attachment["id"])
        wait_volume_status(cinder_api, ctx, volume["id"], "available")
    finally:
        libvirt_driver.destroy(instance)
        cinder_api.delete(ctx, volume["id"])
