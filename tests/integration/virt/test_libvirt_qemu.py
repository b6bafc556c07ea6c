"""The LibvirtDriver on real QEMU: qemu:///embed, TCG domains without an OS.

What the fake cannot prove: that QEMU really opens the volume file, that its
image locking refuses a second non-shareable user, that blockResize grows the
file, that detach removes the device from the running domain, and that a swap
volume's block copy mirrors the running disk byte for byte into the new file,
pivots onto it (same target and serial, definition updated) or, cancelled,
leaves the disk where it was. That the firmware boots the root volume (a
boot sector that prints on the serial port) and that the serial console's
log holds what the guest printed.

Needs (as root): libvirt-daemon, libvirt-daemon-driver-qemu, qemu-system-x86,
qemu-utils, libvirt-python in the venv, and the ``libvirt-qemu`` user. These
tests fail, never skip, when any of it is missing.
"""

import hashlib
import os
import shutil
import subprocess
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests import polling
from volumesvc import exception
from volumesvc.states import power_state
from volumesvc.virt import instance_path
from volumesvc_aio import guest_image

pytestmark = pytest.mark.integration

GiB = 1 << 30
MiB = 1 << 20


def _require_environment(root):
    try:
        import libvirt  # noqa: F401 - only checking it is importable
    except ImportError as exc:
        pytest.fail(f"libvirt-python is not importable ({exc}); install it in the venv")
    if shutil.which("qemu-system-x86_64") is None:
        pytest.fail("qemu-system-x86_64 not found: apt-get install qemu-system-x86")
    fstype = subprocess.run(["stat", "-f", "-c", "%T", root], capture_output=True,
                            text=True, check=False).stdout.strip()
    if fstype == "tmpfs":
        pytest.fail(f"{root} is on tmpfs: cache='none' needs O_DIRECT, use a real filesystem")


@pytest.fixture(scope="module")
def workdir(qemu_host):
    _require_environment(qemu_host.workdir)
    return qemu_host.workdir


@pytest.fixture(scope="module")
def driver(qemu_host):
    """The session's embedded-QEMU driver (one embedded root per process)."""
    yield qemu_host.driver
    for guest in qemu_host.driver.host.list_guests():
        qemu_host.driver.destroy({"uuid": guest.uuid})


@pytest.fixture
def make_instance(driver):
    spawned = []

    def _make(block_device_info=None, memory_mb=64):
        instance = {"uuid": str(uuid.uuid4()), "memory_mb": memory_mb, "vcpus": 1}
        driver.spawn(instance, block_device_info)
        spawned.append(instance)
        return instance

    yield _make
    for instance in spawned:
        driver.destroy(instance)


@pytest.fixture
def make_volume(workdir):
    def _make(size=GiB, multiattach=False):
        vol_id = str(uuid.uuid4())
        path = os.path.join(workdir, f"volume-{vol_id}")
        with open(path, "wb") as f:
            f.truncate(size)  # sparse
        info = {"driver_volume_type": "local", "data": {"device_path": path},
                "serial": vol_id}
        if multiattach:
            info["multiattach"] = True
        return info
    return _make


def _live_disks(driver, instance, inactive=False):
    """Read the domain XML straight from libvirt, not through the driver's parser."""
    lv = driver.libvirt
    dom = driver.host.get_connection().lookupByUUIDString(instance["uuid"])
    xml = dom.XMLDesc(lv.VIR_DOMAIN_XML_INACTIVE if inactive else 0)
    disks = {}
    for disk in ET.fromstring(xml).findall("./devices/disk"):
        serial = disk.findtext("serial")
        disks[serial] = disk
    return disks


def _bdm(connection_info, dev, boot_index=None):
    return {"connection_info": connection_info, "mount_device": dev,
            "boot_index": boot_index, "disk_bus": "scsi", "device_type": "disk"}


def test_spawn_with_boot_volume_and_hotplug(driver, make_instance, make_volume):
    root = make_volume()
    instance = make_instance({"root_device_name": "/dev/sda",
                              "block_device_mapping": [_bdm(root, "/dev/sda", 0)]})
    assert driver.get_info(instance) == power_state.RUNNING
    assert instance["uuid"] in driver.list_instance_uuids()

    vol = make_volume()
    assert driver.attach_volume(vol, instance, None) == "/dev/sdb"
    disks = _live_disks(driver, instance)
    disk = disks[vol["serial"]]
    assert disk.find("source").get("file") == vol["data"]["device_path"]
    assert disk.find("target").get("dev") == "sdb"
    assert disk.find("alias").get("name") == "ua-" + vol["serial"]
    assert disk.find("driver").get("cache") == "none"
    assert disk.find("shareable") is None
    assert root["serial"] in disks
    assert vol["serial"] in _live_disks(driver, instance, inactive=True)

    driver.detach_volume(vol, instance, "/dev/sdb")
    assert vol["serial"] not in _live_disks(driver, instance)
    assert vol["serial"] not in _live_disks(driver, instance, inactive=True)


def test_a_virtio_detach_no_guest_answers_is_asked_again_then_fails(
        driver, make_instance, make_volume, caplog):
    """Real QEMU holds the unplug pending: no guest OS here answers it.

    The driver asks again after the first wait (QEMU takes the second
    request), and the detach fails only after every request's wait, saying
    so; the disk stays in the live domain, gone from the persistent one.
    """
    root = make_volume()
    instance = make_instance({"root_device_name": "/dev/sda",
                              "block_device_mapping": [_bdm(root, "/dev/sda", 0)]})
    vol = make_volume()
    assert driver.attach_volume(vol, instance, "/dev/vdb", disk_bus="virtio") == "/dev/vdb"
    driver.conf.set_override("device_detach_timeout", 2, group="libvirt")
    driver.conf.set_override("device_detach_attempts", 2, group="libvirt")
    try:
        with pytest.raises(exception.DeviceDetachFailed, match="after 2 requests of 2s"):
            driver.detach_volume(vol, instance, "/dev/vdb")
    finally:
        driver.conf.clear_override("device_detach_timeout", group="libvirt")
        driver.conf.clear_override("device_detach_attempts", group="libvirt")
    assert "detach request 1 of 2; asking the guest again" in caplog.text
    assert vol["serial"] in _live_disks(driver, instance)
    assert vol["serial"] not in _live_disks(driver, instance, inactive=True)


def test_same_file_needs_multiattach(driver, make_instance, make_volume):
    first, second = make_instance(), make_instance()
    vol = make_volume()
    driver.attach_volume(vol, first, "/dev/sdb")
    with pytest.raises(exception.VirtDriverError, match="lock"):
        driver.attach_volume(vol, second, "/dev/sdb")
    assert vol["serial"] not in _live_disks(driver, second)

    shared = make_volume(multiattach=True)
    driver.attach_volume(shared, first, "/dev/sdc")
    plain = dict(shared, multiattach=False)
    with pytest.raises(exception.VirtDriverError, match="lock"):
        driver.attach_volume(plain, second, "/dev/sdc")
    driver.attach_volume(shared, second, "/dev/sdc")
    for instance in (first, second):
        disk = _live_disks(driver, instance)[shared["serial"]]
        assert disk.find("shareable") is not None
        assert disk.find("driver").get("cache") == "none"
        assert disk.find("source").get("file") == shared["data"]["device_path"]

    # Detaching from one leaves the other attached.
    driver.detach_volume(shared, first, "/dev/sdc")
    assert shared["serial"] not in _live_disks(driver, first)
    assert shared["serial"] in _live_disks(driver, second)


def test_extend_with_block_resize(driver, make_instance, make_volume):
    first, second = make_instance(), make_instance()
    vol = make_volume(size=GiB, multiattach=True)
    driver.attach_volume(vol, first, "/dev/sdb")
    driver.attach_volume(vol, second, "/dev/sdb")

    assert driver.extend_volume(vol, first, 2 * GiB) == 2 * GiB
    dom = driver.host.get_connection().lookupByUUIDString(first["uuid"])
    assert dom.blockInfo("sdb", 0)[0] == 2 * GiB
    assert os.path.getsize(vol["data"]["device_path"]) == 2 * GiB
    # NOTE: the other domain sees the new size only after its own resize.
    assert driver.extend_volume(vol, second, 2 * GiB) == 2 * GiB


def test_reboots_keep_the_domain_running(driver, make_instance, make_volume):
    vol = make_volume()
    bdi = {"root_device_name": "/dev/sda", "block_device_mapping": [_bdm(vol, "/dev/sda", 0)]}
    instance = make_instance(bdi)
    driver.reboot(instance, bdi, "SOFT")
    assert driver.get_info(instance) == power_state.RUNNING
    driver.reboot(instance, bdi, "HARD")
    assert driver.get_info(instance) == power_state.RUNNING
    assert vol["serial"] in _live_disks(driver, instance)


def test_destroy_undefines_and_releases_the_volume(driver, make_volume):
    vol = make_volume()
    bdi = {"root_device_name": "/dev/sda", "block_device_mapping": [_bdm(vol, "/dev/sda", 0)]}
    instance = {"uuid": str(uuid.uuid4())}
    driver.spawn(instance, bdi)
    driver.destroy(instance)
    assert instance["uuid"] not in driver.list_instance_uuids()
    with pytest.raises(exception.InstanceNotFound):
        driver.get_info(instance)
    # QEMU closed the file: another domain may now take its write lock.
    other = {"uuid": str(uuid.uuid4())}
    driver.spawn(other, bdi)
    driver.destroy(other)


# -- swap volume ------------------------------------------------------------------


def _fill(info):
    with open(info["data"]["device_path"], "r+b") as f:
        f.write(os.urandom(8 * MiB))


def _digest(path, length):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(length)).hexdigest()


def test_swap_copies_and_pivots_the_running_disk(driver, make_instance, make_volume):
    """Into a larger volume, as Cinder may hand one over.

    Regression: QEMU mirrors only between disks of one size; the copy of the
    1 GiB disk into the 2 GiB volume failed at once (no job in blockJobInfo
    after blockCopy, the swap rolled back) until the disk was grown first.
    """
    root = make_volume()
    instance = make_instance({"root_device_name": "/dev/sda",
                              "block_device_mapping": [_bdm(root, "/dev/sda", 0)]})
    old = make_volume()
    _fill(old)
    driver.attach_volume(old, instance, "/dev/sdb")
    new = make_volume(size=2 << 30)
    # The compute keeps the guest's serial: the new connection carries the old one.
    new["serial"] = old["serial"]
    driver.swap_volume(old, new, instance, "/dev/sdb", resize_to_bytes=2 << 30)

    assert driver.get_info(instance) == power_state.RUNNING
    live = _live_disks(driver, instance)[old["serial"]]
    assert live.find("source").get("file") == new["data"]["device_path"]
    assert live.find("target").get("dev") == "sdb"
    defined = _live_disks(driver, instance, inactive=True)[old["serial"]]
    assert defined.find("source").get("file") == new["data"]["device_path"]
    assert defined.find("target").get("dev") == "sdb"
    size = 1 << 30
    assert _digest(new["data"]["device_path"], size) == _digest(old["data"]["device_path"],
                                                                size)
    # No job is left, and the disk detaches as the new volume's.
    guest = driver.host.get_guest(instance["uuid"])
    assert guest.block_job_info("sdb") == {}
    driver.detach_volume(new, instance, "/dev/sdb")
    assert old["serial"] not in _live_disks(driver, instance)


def test_a_copy_that_cannot_start_leaves_the_disk_alone(driver, make_instance, make_volume):
    root = make_volume()
    instance = make_instance({"root_device_name": "/dev/sda",
                              "block_device_mapping": [_bdm(root, "/dev/sda", 0)]})
    old = make_volume()
    driver.attach_volume(old, instance, "/dev/sdb")
    missing = {"driver_volume_type": "local", "serial": old["serial"],
               "data": {"device_path": os.path.join(os.path.dirname(
                   old["data"]["device_path"]), "no-such-volume")}}
    with pytest.raises(exception.VirtDriverError):
        driver.swap_volume(old, missing, instance, "/dev/sdb")
    live = _live_disks(driver, instance)[old["serial"]]
    assert live.find("source").get("file") == old["data"]["device_path"]
    assert driver.host.get_guest(instance["uuid"]).block_job_info("sdb") == {}


# -- booting from the root volume, and the serial console's log -------------------

# A boot sector that prints its message on the first serial port (COM1,
# I/O port 0x3f8) and halts: cli; xor ax,ax; mov ds,ax; cld; mov si,msg;
# mov dx,0x3f8; then lodsb / test al,al / jz halt / out dx,al / jmp back;
# halt: hlt; jmp halt. The message starts at offset 23 (0x7c17).
_PRINT_ON_COM1 = bytes.fromhex("fa31c08ed8fcbe177cbaf803ac84c07403eeebf8f4ebfd")


def _write_boot_sector(info, message):
    """Make the volume bootable by the firmware; booted, it prints ``message``."""
    sector = _PRINT_ON_COM1 + message.encode() + b"\r\n\0"
    sector = sector.ljust(510, b"\0") + b"\x55\xaa"
    with open(info["data"]["device_path"], "r+b") as f:
        f.write(sector)


def _console_says(driver, instance, text, timeout=60):
    """The console output once it holds ``text`` (QEMU TCG boots in seconds on a quiet host)."""
    found = polling.eventually(lambda: text.encode() in driver.get_console_output(instance),
                               timeout=timeout, interval=0.2)
    output = driver.get_console_output(instance)
    assert found, f"{text!r} not in the console output within {timeout}s: {output!r}"
    return output


def test_guest_boots_from_the_root_volume_and_its_console_is_logged(
        driver, make_instance, make_volume):
    """The boot index 0 volume is what the firmware boots, whatever the disk order.

    Both volumes are bootable and each prints its own volume id, so the
    console shows which one the firmware chose; SeaBIOS's own lines
    (``useserial``) come first in the same log.
    """
    root, data = make_volume(), make_volume()
    _write_boot_sector(root, f"VSBOOT {root['serial']}")
    _write_boot_sector(data, f"VSBOOT {data['serial']}")
    bdi = {"root_device_name": "/dev/sdb",
           "block_device_mapping": [_bdm(data, "/dev/sda"), _bdm(root, "/dev/sdb", 0)]}
    instance = make_instance(bdi)
    output = _console_says(driver, instance, f"VSBOOT {root['serial']}")
    assert b"SeaBIOS" in output
    assert output.index(b"SeaBIOS") < output.index(f"VSBOOT {root['serial']}".encode())
    assert f"VSBOOT {data['serial']}".encode() not in output
    with open(instance_path.console_log(driver.conf, instance["uuid"]), "rb") as f:
        assert f.read() == output

    # Stopped: the last run's log is still served.
    driver.power_off(instance)
    assert driver.get_console_output(instance) == output
    # A new QEMU (start, hard reboot) begins a new log, as Nova's append='off'.
    driver.power_on(instance, bdi)
    again = _console_says(driver, instance, f"VSBOOT {root['serial']}")
    assert again.count(b"SeaBIOS (version") == 1


def test_console_of_a_guest_without_a_bootable_disk(driver, make_instance, make_volume):
    """An empty root volume: the firmware's own serial output says why nothing booted."""
    root = make_volume()
    instance = make_instance({"root_device_name": "/dev/sda",
                              "block_device_mapping": [_bdm(root, "/dev/sda", 0)]})
    output = _console_says(driver, instance, "Boot failed")
    assert b"Booting from Hard Disk" in output


GUEST_BOOT_TIMEOUT = 240  # the Linux guest under TCG on two shared cores


def test_the_project_guest_says_ready_on_its_console(driver, make_instance, make_volume):
    """The starter guest (aio/volumesvc_aio/guest_image.py) on its root volume.

    Its kernel and init write to ttyS0; what they printed is what
    ``get_console_output`` (so ``os-getConsoleOutput``) serves, and a hard
    reboot's new QEMU starts a new log that the guest fills again.
    """
    root = make_volume()
    subprocess.run(["cp", "--sparse=always", guest_image.ensure_image(),
                    root["data"]["device_path"]], check=True)
    bdi = {"root_device_name": "/dev/sda", "block_device_mapping": [_bdm(root, "/dev/sda", 0)]}
    instance = make_instance(bdi, memory_mb=256)
    output = _console_says(driver, instance, "VSGUEST ready", timeout=GUEST_BOOT_TIMEOUT)
    assert b"SeaBIOS" in output
    driver.reboot(instance, bdi, "HARD")
    again = _console_says(driver, instance, "VSGUEST ready", timeout=GUEST_BOOT_TIMEOUT)
    assert again.count(b"VSGUEST ready") == 1
