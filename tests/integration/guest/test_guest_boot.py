"""The guest image, built from Debian packages and booted by plain QEMU.

What the all-in-one's servers run, without the all-in-one: the image as a
virtio-scsi disk on a q35 machine under software emulation with 256 MiB, a
second virtio-scsi disk whose serial is a volume id, a read-only virtio-blk
disk, and a config drive (ISO 9660 on a CD-ROM or vfat on a disk, label
``config-2``) whose user_data prints a marker. Everything
asserted is read from the serial console, as a user reads it through
``os-getConsoleOutput`` (doc/source/admin/guest-image.rst). The disk
watcher's attach, extend and detach lines are provoked through QEMU's
monitor (QMP), as the compute's libvirt would.
"""

import json
import os
import re
import socket
import subprocess
import time
import uuid

import pytest

from volumesvc_aio import guest_image

BOOT_TIMEOUT = 180  # two shared cores under load; a quiet machine needs ~5 s
VOLUME_ID = str(uuid.uuid4())
HOTPLUG_ID = str(uuid.uuid4())
BLK_ID = str(uuid.uuid4())  # a read-only virtio-blk disk
MIB = 1 << 20


@pytest.fixture(scope="module")
def image():
    return guest_image.ensure_image()


class Qmp:
    """QEMU's monitor protocol on a UNIX socket: one command at a time."""

    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.reader = self.sock.makefile("r")
        json.loads(self.reader.readline())  # the greeting
        self.execute("qmp_capabilities")

    def execute(self, command, **arguments):
        self.sock.sendall(json.dumps({"execute": command, "arguments": arguments}).encode())
        while True:
            reply = json.loads(self.reader.readline())
            if "event" in reply:
                continue
            if "error" in reply:
                raise AssertionError(f"{command}: {reply['error']}")
            return reply["return"]

    def close(self):
        self.reader.close()
        self.sock.close()


class Console:
    """The guest's serial console log, read as it grows."""

    def __init__(self, path, qemu):
        self.path = path
        self.qemu = qemu

    def text(self):
        if not os.path.exists(self.path):  # QEMU has not opened it yet
            return ""
        with open(self.path, "rb") as f:
            return f.read().decode(errors="replace").replace("\r", "")

    def lines(self):
        return [line for line in self.text().split("\n") if line.startswith("VSGUEST ")]

    def wait_for(self, pattern, timeout=BOOT_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.text().split("\n"):
                if re.fullmatch(pattern, line):
                    return line
            assert self.qemu.poll() is None, f"QEMU exited: {self.text()[-2000:]}"
            time.sleep(0.2)
        raise AssertionError(f"no line matching {pattern!r} in:\n{self.text()[-3000:]}")


@pytest.fixture
def config_drive(tmp_path):
    """A config-2 ISO whose user_data prints a marker and finds the volume by its id."""
    tree = tmp_path / "config-drive" / "openstack" / "latest"
    tree.mkdir(parents=True)
    (tree / "user_data").write_text(
        "#!/bin/sh\n"
        "echo \"MARKER user_data ran as uid $(id -u)\"\n"
        f"echo \"MARKER volume at $(vsdisk {VOLUME_ID})\"\n"
        f"echo \"MARKER blk at $(vsdisk {BLK_ID})\"\n"
        "exit 7\n")
    (tree / "meta_data.json").write_text(json.dumps({"uuid": str(uuid.uuid4())}))
    iso = tmp_path / "config.iso"
    subprocess.run(["xorriso", "-as", "mkisofs", "-quiet", "-V", "config-2", "-J", "-R",
                    "-o", str(iso), str(tmp_path / "config-drive")],
                   check=True, capture_output=True, timeout=60)
    return iso


@pytest.fixture
def guest(tmp_path, image, config_drive):
    """The booted guest: (console, qmp, seconds from QEMU's start to ``VSGUEST ready``)."""
    volume = tmp_path / "volume.raw"
    with open(volume, "wb") as f:
        f.truncate(48 * MIB)
    blk = tmp_path / "blk.raw"
    with open(blk, "wb") as f:
        f.truncate(16 * MIB)
    log, qmp_path = tmp_path / "console.log", str(tmp_path / "qmp.sock")
    argv = guest_image.qemu_argv(image, log, devices=[
        "-qmp", f"unix:{qmp_path},server=on,wait=off",
        "-drive", f"file={volume},format=raw,if=none,id=vol",
        "-device", f"scsi-hd,drive=vol,bus=scsi0.0,serial={VOLUME_ID}",
        "-drive", f"file={config_drive},format=raw,if=none,id=cfg,media=cdrom,readonly=on",
        "-device", "scsi-cd,drive=cfg,bus=scsi0.0",
        "-drive", f"file={blk},format=raw,if=none,id=blk,readonly=on",
        "-device", f"virtio-blk-pci,drive=blk,serial={BLK_ID}",
    ])
    started = time.monotonic()
    qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "qemu.err", "wb"))
    console = Console(log, qemu)
    qmp = None
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(qmp_path):
            assert qemu.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "qemu.err").read_text()
            time.sleep(0.1)
        console.wait_for("VSGUEST ready")
        ready_after = time.monotonic() - started
        qmp = Qmp(qmp_path)
        yield console, qmp, ready_after
    finally:
        if qmp is not None:
            qmp.close()
        qemu.kill()
        qemu.wait(timeout=30)


def test_guest_boots_runs_user_data_and_reports_its_disks(guest, image, tmp_path):
    console, qmp, ready_after = guest
    print(f"\nguest image {os.path.getsize(image)} bytes; VSGUEST ready "
          f"{ready_after:.1f} s after QEMU started")
    assert os.path.getsize(image) <= 24 * MIB
    console.wait_for(r"VSGUEST user-data rc=7")
    lines = console.lines()
    sectors = 48 * MIB // 512
    volume_line = f"VSGUEST disk name=sdb serial={VOLUME_ID} size={sectors} ro=0"
    # The boot's order: disks, config drive, ready, user_data.
    assert lines.index(volume_line) < lines.index("VSGUEST config-drive found=1") \
        < lines.index("VSGUEST ready") < lines.index("VSGUEST user-data start") \
        < lines.index("VSGUEST user-data rc=7")
    assert re.fullmatch(r"VSGUEST disk name=sda serial= size=\d+ ro=0", lines[0])
    text = console.text()
    assert "MARKER user_data ran as uid 0\n" in text
    assert "MARKER volume at /dev/sdb\n" in text
    # virtio-blk keeps 20 characters of a serial; the full id still finds it.
    assert f"VSGUEST disk name=vda serial={BLK_ID[:20]} size={16 * MIB // 512} ro=1" in lines
    assert "MARKER blk at /dev/vda\n" in text
    # The guest's scripts ran without a shell error.
    assert not re.search(r"can't|cannot|not found|No such file", text), text

    # An attach: a disk with the volume's id as its serial appears.
    hotplug = tmp_path / "hotplug.raw"
    with open(hotplug, "wb") as f:
        f.truncate(16 * MIB)
    qmp.execute("blockdev-add", **{"node-name": "hot", "driver": "raw",
                                   "file": {"driver": "file", "filename": str(hotplug)}})
    qmp.execute("device_add", driver="scsi-hd", id="hotdisk", drive="hot", bus="scsi0.0",
                serial=HOTPLUG_ID)
    console.wait_for(rf"VSGUEST disk name=sd[c-z] serial={HOTPLUG_ID} "
                     rf"size={16 * MIB // 512} ro=0", timeout=60)
    # An extend: the same disk with its new size, no rescan asked.
    qmp.execute("block_resize", **{"node-name": "hot", "size": 32 * MIB})
    console.wait_for(rf"VSGUEST disk name=sd[c-z] serial={HOTPLUG_ID} "
                     rf"size={32 * MIB // 512} ro=0", timeout=60)
    # A detach: gone.
    qmp.execute("device_del", id="hotdisk")
    console.wait_for(rf"VSGUEST gone name=sd[c-z] serial={HOTPLUG_ID}", timeout=60)
    # The other disks were not reported gone.
    assert not [line for line in console.lines()
                if line.startswith("VSGUEST gone") and HOTPLUG_ID not in line]


def test_guest_without_config_drive_says_so_and_is_ready(image, tmp_path):
    log = tmp_path / "console.log"
    qemu = subprocess.Popen(guest_image.qemu_argv(image, log), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        console = Console(log, qemu)
        console.wait_for("VSGUEST ready")
        lines = console.lines()
        assert lines.index("VSGUEST config-drive found=0") < lines.index("VSGUEST ready")
        time.sleep(2)
        assert not [line for line in console.lines() if "user-data" in line]
    finally:
        qemu.kill()
        qemu.wait(timeout=30)


def test_guest_finds_a_vfat_config_drive_on_a_disk(image, tmp_path):
    """Nova's other config drive format: vfat, label config-2, on a disk."""
    drive = tmp_path / "config.vfat"
    subprocess.run(["mkfs.vfat", "-n", "config-2", "-C", str(drive), "2048"],
                   check=True, capture_output=True, timeout=60)
    user_data = tmp_path / "user_data"
    user_data.write_text("#!/bin/sh\necho MARKER from vfat\n")
    for argv in (["mmd", "-i", str(drive), "::openstack", "::openstack/latest"],
                 ["mcopy", "-i", str(drive), str(user_data), "::openstack/latest/user_data"]):
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
    log = tmp_path / "console.log"
    qemu = subprocess.Popen(guest_image.qemu_argv(image, log, devices=[
        "-drive", f"file={drive},format=raw,if=none,id=cfg,readonly=on",
        "-device", "scsi-hd,drive=cfg,bus=scsi0.0"]),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        console = Console(log, qemu)
        console.wait_for("VSGUEST user-data rc=0")
        assert "VSGUEST config-drive found=1" in console.lines()
        assert "MARKER from vfat\n" in console.text()
    finally:
        qemu.kill()
        qemu.wait(timeout=30)
