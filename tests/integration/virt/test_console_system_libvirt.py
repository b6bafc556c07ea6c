"""The serial console under libvirtd (``qemu:///system``): virtlogd writes and rotates the log.

What the embedded-QEMU tests cannot show: that libvirtd accepts the
``<serial type='pty'><log .../>`` the driver writes and hands the log to
virtlogd, that virtlogd rotates it (``console.log``, ``console.log.0``...)
when a guest prints more than its ``max_size`` (2 MiB by default), and that
``get_console_output`` then still serves the newest 100 KiB, whole lines
between its two ends (reading across the files is a unit test's job:
tests/unit/virt/test_console.py).
The guest is a boot sector that prints one line on COM1 for ever. Uses the
session's ``system_libvirt``; fails, never skips, without it.
"""

import os
import uuid

import pytest

from tests import polling
from tests.integration.virt import system_driver
from volumesvc.virt import instance_path
from volumesvc.virt.libvirt import console

pytestmark = pytest.mark.integration

# cli; xor ax,ax; mov ds,ax; cld; mov dx,0x3f8; again: mov si,msg; next: lodsb;
# test al,al; jz again... (jz +3 to "jmp again"); out dx,al; jmp next;
# jmp again. The message starts at offset 22 (0x7c16).
_PRINT_FOREVER = bytes.fromhex("fa31c08ed8fcbaf803be167cac84c07403eeebf8ebf3")


@pytest.fixture(scope="module")
def driver(system_libvirt):
    yield from system_driver.system_driver(system_libvirt, "console")


def _chatty_root_volume(directory, line):
    vol_id = str(uuid.uuid4())
    path = os.path.join(directory, f"volume-{vol_id}")
    sector = (_PRINT_FOREVER + line.encode() + b"\r\n\0").ljust(510, b"\0") + b"\x55\xaa"
    with open(path, "wb") as f:
        f.write(sector)
        f.truncate(1 << 30)
    return {"driver_volume_type": "local", "data": {"device_path": path}, "serial": vol_id}


def test_virtlogd_rotates_the_log_and_the_newest_bytes_are_served(driver):
    root = _chatty_root_volume(driver.conf.state_path, "VSCHATTY line of a guest that never stops")
    instance = {"uuid": str(uuid.uuid4()), "memory_mb": 64, "vcpus": 1}
    driver.spawn(instance, {"root_device_name": "/dev/sda", "block_device_mapping": [
        {"connection_info": root, "mount_device": "/dev/sda", "boot_index": 0,
         "disk_bus": "scsi", "device_type": "disk"}]})
    try:
        log = instance_path.console_log(driver.conf, instance["uuid"])
        rotated = polling.eventually(lambda: os.path.exists(log + ".0"), timeout=300,
                                     interval=1)
        assert rotated, f"no rotation of {log}: {os.path.getsize(log)} bytes"
        output = driver.get_console_output(instance)
        assert len(output) == console.MAX_CONSOLE_BYTES
        lines = output.split(b"\r\n")
        # Whole lines in between: the cut falls only at the two ends.
        assert set(lines[1:-1]) == {b"VSCHATTY line of a guest that never stops"}
    finally:
        driver.destroy(instance)
