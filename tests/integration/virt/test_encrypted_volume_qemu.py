"""An encrypted volume on real libvirt and QEMU: native LUKS, its secret, the guest's data.

What the fake cannot prove: that libvirtd takes the volume secret the driver
defines and the ``<encryption format='luks'>`` the disk names it by, that
QEMU opens a LUKS container with the passphrase the compute derives from
the key, and that what a guest writes reaches the backend encrypted.

The volume is a file in LUKS format made with ``cryptsetup`` (as os-brick
formats a volume, with the key's passphrase), behind FakeCinder's
encryption metadata and the in-memory key manager, through the product's
path: ``compute.encryption.prepare`` (metadata, check, key as the user),
``connect_volume``, ``open_volume`` (the secret), a live ``attach_volume``,
then ``detach_volume`` and ``disconnect_volume``. The project's starter
guest writes a marker to the disk it finds by the volume id (``vsdisk``)
and reads it back from the device (the console contract in
doc/source/admin/guest-image.rst). Runs on ``qemu:///system`` (the embedded
driver has no secrets); fails, never skips, without it.
"""

import os
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.integration.virt import system_driver
from tests.integration.virt.luks_guest import (
    LUKS_MAGIC,
    boot,
    make_cloud,
    payload_offset,
    plaintext,
    secret_of,
    wait_console,
    wait_for_disk,
)
from tests.integration.virt.luks_guest import luks_volume as _luks_volume
from volumesvc.compute import encryption

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def driver(system_libvirt):
    yield from system_driver.system_driver(system_libvirt, "luks")


@pytest.fixture
def cloud(driver):
    return make_cloud(driver)


def test_guest_writes_through_native_luks_and_only_ciphertext_reaches_the_file(
        driver, cloud):
    cinder, keys, ctx = cloud
    volume_id, path, passphrase, info = _luks_volume(cinder, keys, ctx)
    marker = f"VSLUKS-{uuid.uuid4().hex}"
    # Waits for the volume (hot-plugged after boot), writes the marker to
    # the disk, drops the guest's buffers and reads the sector back from QEMU.
    script = ("#!/bin/sh\n" + wait_for_disk(volume_id)
              + f"echo {marker} | dd of=$dev bs=512 conv=sync 2>/dev/null && sync\n"
              f"blockdev --flushbufs $dev\n"
              f"echo \"READBACK $(dd if=$dev bs=512 count=1 2>/dev/null | head -n 1)\"\n")
    instance, log = boot(driver, "luks", script)
    try:
        wait_console(log, "VSGUEST user-data start")

        plan = encryption.prepare(ctx, cinder=cinder, keys=keys, driver=driver,
                                  connection_info=info)
        assert plan.method == "qemu"
        driver.connect_volume(info)
        encryption.open_volume(driver, info, plan)
        secret = secret_of(driver, volume_id)
        assert secret is not None and secret.UUIDString() == info["encryption"]["secret_uuid"]
        driver.attach_volume(info, instance, "/dev/sdb")
        live = driver.get_volume_disk_info(instance, volume_id)
        assert live is not None

        text = wait_console(log, "VSGUEST user-data rc=")
        assert "VSGUEST user-data rc=0" in text, text[-2000:]
        # (c) the guest reads its marker back through QEMU's decryption ...
        assert f"READBACK {marker}\n" in text
        # ... the secret is there while the disk is attached (a) ...
        assert secret_of(driver, volume_id) is not None

        driver.detach_volume(info, instance, "/dev/sdb")
        driver.disconnect_volume(info)
        # (a) ... and gone with the detach.
        assert secret_of(driver, volume_id) is None
    finally:
        driver.destroy(instance)
        if secret_of(driver, volume_id) is not None:
            driver.forget_volume_secret(volume_id)

    with open(path, "rb") as f:
        raw = f.read()
    # (b) the backend holds a LUKS container ...
    assert raw.startswith(LUKS_MAGIC)
    # (c) ... with the marker nowhere in its bytes, while the key opens it to the marker.
    assert marker.encode() not in raw
    assert plaintext(path, passphrase, 512).startswith(marker.encode() + b"\n")


def test_two_domains_on_the_host_open_a_multiattach_luks_volume_with_one_secret(
        driver, cloud):
    """QEMU opens the same LUKS container, shared, in two domains with the one secret.

    The compute keeps the host connection (and so the secret) while another
    server here uses the volume (compute/connections.py): the first detach
    is the domain's alone, the last one disconnects.
    """
    cinder, keys, ctx = cloud
    volume_id, _path, _passphrase, info = _luks_volume(cinder, keys, ctx)
    info["multiattach"] = True
    instances = [dict(uuid=str(uuid.uuid4()), memory_mb=64, vcpus=1) for _ in range(2)]
    connections = []
    try:
        for instance in instances:
            driver.spawn(instance, None)
            connection = {**info, "data": dict(info["data"])}
            plan = encryption.prepare(ctx, cinder=cinder, keys=keys, driver=driver,
                                      connection_info=connection)
            driver.connect_volume(connection)
            encryption.open_volume(driver, connection, plan)
            driver.attach_volume(connection, instance, "/dev/sdb")
            connections.append(connection)
        secret = secret_of(driver, volume_id)
        for instance in instances:
            disk = driver.get_volume_disk_info(instance, volume_id)
            assert disk is not None and disk.shareable
            assert ET.fromstring(disk.xml).find("source/encryption/secret").get(
                "uuid") == secret.UUIDString()

        driver.detach_volume(connections[0], instances[0], "/dev/sdb")
        assert driver.get_volume_disk_info(instances[0], volume_id) is None
        assert secret_of(driver, volume_id) is not None
        assert driver.get_volume_disk_info(instances[1], volume_id) is not None

        driver.detach_volume(connections[1], instances[1], "/dev/sdb")
        driver.disconnect_volume(connections[1])
        assert secret_of(driver, volume_id) is None
    finally:
        for instance in instances:
            driver.destroy(instance)
        if secret_of(driver, volume_id) is not None:
            driver.forget_volume_secret(volume_id)


@pytest.mark.parametrize("header_on_top", [False, True], ids=["header-inside", "header-on-top"])
def test_an_extend_gives_the_guest_the_payload_the_grown_volume_holds(driver, cloud,
                                                                     header_on_top):
    """Cinder's RBD and file drivers put the header on top of the size, os-brick inside it."""
    cinder, keys, ctx = cloud
    volume_id, path, passphrase, info = _luks_volume(cinder, keys, ctx, size_mb=64,
                                                     header_on_top=header_on_top)
    header = payload_offset(path)
    # What the guest sees of a volume of N MiB in this layout.
    payload = (lambda mib: mib << 20) if header_on_top else (lambda mib: (mib << 20) - header)
    marker = f"VSLUKSX-{uuid.uuid4().hex}"
    # Writes a marker once the volume is there, then waits for the resize and
    # reads the marker back from the grown disk.
    script = ("#!/bin/sh\n" + wait_for_disk(volume_id)
              + f"echo {marker} | dd of=$dev bs=512 conv=sync 2>/dev/null && sync\n"
              f"before=$(blockdev --getsize64 $dev); echo \"SIZE-BEFORE $before\"\n"
              f"i=0; while [ $(blockdev --getsize64 $dev) = $before ]; do i=$((i+1)); "
              f"[ $i -gt 300 ] && exit 4; sleep 1; done\n"
              f"blockdev --flushbufs $dev\n"
              f"echo \"SIZE-AFTER $(blockdev --getsize64 $dev)\"\n"
              f"echo \"READBACK $(dd if=$dev bs=512 count=1 2>/dev/null | head -n 1)\"\n")
    instance, log = boot(driver, "luksx", script)
    try:
        wait_console(log, "VSGUEST user-data start")
        plan = encryption.prepare(ctx, cinder=cinder, keys=keys, driver=driver,
                                  connection_info=info)
        driver.connect_volume(info)
        encryption.open_volume(driver, info, plan)
        driver.attach_volume(info, instance, "/dev/sdb")
        text = wait_console(log, "SIZE-BEFORE ")
        assert f"SIZE-BEFORE {payload(64)}\n" in text, text[-2000:]
        # Cinder grows the volume (the file) to 96 MiB in its layout, then the compute resizes.
        grown = payload(96) + header
        os.truncate(path, grown)
        seen = driver.extend_volume(info, instance, 96 << 20)
        # What the compute compares with Cinder's size: the volume the disk fills.
        assert seen == grown >= 96 << 20
        # The file stays the size Cinder gave it: QEMU grew the payload into it.
        assert os.path.getsize(path) == grown
        text = wait_console(log, "VSGUEST user-data rc=")
        assert "VSGUEST user-data rc=0" in text, text[-2000:]
        assert f"SIZE-AFTER {payload(96)}\n" in text
        assert f"READBACK {marker}\n" in text
        driver.detach_volume(info, instance, "/dev/sdb")
        driver.disconnect_volume(info)
    finally:
        driver.destroy(instance)
        if secret_of(driver, volume_id) is not None:
            driver.forget_volume_secret(volume_id)
    # Still one LUKS container the key opens to the marker.
    assert plaintext(path, passphrase, 512).startswith(marker.encode() + b"\n")
