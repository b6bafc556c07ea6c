"""Swap volume between a plain and an encrypted volume on real libvirt and QEMU, both ways.

What the fake cannot prove: that libvirt takes a block copy destination
whose ``<source>`` carries ``<encryption format='luks'>`` and QEMU writes
the guest's data through the new volume's LUKS layer (and reads it through
the old one's), that the pivot leaves the guest on the new volume with its
data, and that the old volume's secret goes with its host connection.

The steps are the compute's (compute/swap.py) at the driver level: the new
volume's key read as the user and its secret defined before the copy
(``compute.encryption.prepare_swap`` and ``open_volume``), the new
connection info carrying the old serial, ``swap_volume`` (block copy and
pivot), then the old volume's ``disconnect_volume``. The guest writes a
marker before the swap and keeps reading its disk afterwards; once the old
volume's file is wiped, the marker it still reads can only come from the
new volume. Runs on ``qemu:///system`` (secrets need libvirtd).
"""

import os

import pytest

from tests.integration.virt import luks_guest, system_driver
from volumesvc.compute import encryption

pytestmark = pytest.mark.integration

MiB = 1 << 20


@pytest.fixture(scope="module")
def driver(system_libvirt):
    yield from system_driver.system_driver(system_libvirt, "luksswap")


@pytest.fixture
def cloud(driver):
    return luks_guest.make_cloud(driver)


#: "luks": the header out of the volume's size (formatted in place); "luks+header":
#: the payload the whole size, the header on top (Cinder's RBD and file drivers).
ENCRYPTED = ("luks", "luks+header")


def _volume(cinder, keys, ctx, kind, size_mb):
    """(volume id, file, passphrase or None, connection info) of ``kind``."""
    if kind in ENCRYPTED:
        return luks_guest.luks_volume(cinder, keys, ctx, size_mb=size_mb,
                                      header_on_top=kind == "luks+header")
    volume_id, path, info = luks_guest.plain_volume(cinder, ctx, size_mb=size_mb)
    return volume_id, path, None, info


def _guest_size(path, passphrase):
    """What the guest sees of a volume: all of it, or what follows its LUKS header."""
    return os.path.getsize(path) - (luks_guest.payload_offset(path) if passphrase else 0)


def _open(driver, cinder, keys, ctx, info):
    plan = encryption.prepare(ctx, cinder=cinder, keys=keys, driver=driver,
                              connection_info=info)
    driver.connect_volume(info)
    encryption.open_volume(driver, info, plan)


@pytest.mark.parametrize("old_kind, old_mb, new_kind, new_mb", [
    ("plain", 64, "luks+header", 64), ("plain", 32, "luks", 64),
    ("luks+header", 64, "plain", 64), ("luks", 64, "plain", 64),
    ("luks", 64, "luks+header", 96)],
    ids=["plain-to-encrypted-same-size", "plain-to-encrypted-larger",
         "encrypted-to-plain-same-size", "encrypted-to-plain-header-inside",
         "encrypted-to-encrypted"])
def test_the_guest_keeps_its_data_across_a_swap(driver, cloud, old_kind, old_mb, new_kind,
                                                new_mb):
    """Cinder's same-size retype both ways, and the layouts where the disk must grow."""
    cinder, keys, ctx = cloud
    new_encrypted = new_kind in ENCRYPTED
    old_id, old_path, _old_pass, old_info = _volume(cinder, keys, ctx, old_kind, old_mb)
    new_id, new_path, new_pass, new_info = _volume(cinder, keys, ctx, new_kind, new_mb)
    # As the compute makes it: the new connection keeps the guest's serial.
    new_info["serial"] = old_id
    marker = f"VSSWAP-{os.urandom(8).hex()}"
    # Writes the marker, then reads sector 0 back from QEMU every two seconds.
    script = ("#!/bin/sh\n" + luks_guest.wait_for_disk(old_id)
              + f"echo {marker} | dd of=$dev bs=512 conv=sync 2>/dev/null && sync\n"
              f"blockdev --flushbufs $dev; echo WRITTEN\n"
              f"while true; do blockdev --flushbufs $dev\n"
              f"echo \"READ $(blockdev --getsize64 $dev) "
              f"$(dd if=$dev bs=512 count=1 2>/dev/null | head -n 1)\"; sleep 2; done\n")
    instance, log = luks_guest.boot(driver, "luksswap", script)
    try:
        luks_guest.wait_console(log, "VSGUEST user-data start")
        _open(driver, cinder, keys, ctx, old_info)
        driver.attach_volume(old_info, instance, "/dev/sdb")
        luks_guest.wait_console(log, "WRITTEN\n")

        plan = encryption.prepare_swap(ctx, cinder=cinder, keys=keys, driver=driver,
                                       old=(old_id, old_info), new=(new_id, new_info))
        assert (plan is not None) == new_encrypted
        driver.connect_volume(new_info)
        encryption.open_volume(driver, new_info, plan)
        if new_encrypted:
            # The new volume's own secret, not the old serial's.
            assert luks_guest.secret_of(driver, new_id).UUIDString() == \
                new_info["encryption"]["secret_uuid"]
        driver.swap_volume(old_info, new_info, instance, "/dev/sdb",
                           resize_to_bytes=new_mb * MiB)
        driver.disconnect_volume(old_info)
        # The old volume's secret went with its connection.
        assert luks_guest.secret_of(driver, old_id) is None

        # The live disk and the definition both name the new volume.
        for inactive in (False, True):
            disk = driver.get_volume_disk_info(instance, old_id, inactive=inactive)
            assert (disk.source, disk.encrypted) == (new_path, new_encrypted)
        # Wipe the old volume: what the guest reads from now on is the new one's.
        with open(old_path, "r+b") as f:
            f.write(b"\0" * (4 * MiB))
        seen = len(luks_guest.console_text(log))
        size = _guest_size(new_path, new_pass)
        luks_guest.wait_console(log, f"READ {size} {marker}\n", since=seen)
        driver.detach_volume(new_info, instance, "/dev/sdb")
        driver.disconnect_volume(new_info)
        assert luks_guest.secret_of(driver, new_id) is None
    finally:
        driver.destroy(instance)
        for volume_id in (old_id, new_id):
            if luks_guest.secret_of(driver, volume_id) is not None:
                driver.forget_volume_secret(volume_id)

    with open(new_path, "rb") as f:
        raw = f.read()
    if new_encrypted:
        # A LUKS container the marker is nowhere in, which the new key opens to it.
        assert raw.startswith(luks_guest.LUKS_MAGIC)
        assert marker.encode() not in raw
        assert luks_guest.plaintext(new_path, new_pass, 512).startswith(
            marker.encode() + b"\n")
    else:
        assert raw.startswith(marker.encode() + b"\n")
