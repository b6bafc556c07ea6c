"""The guest image builder's pure parts, and the guest's console contract.

The guest's disk watcher and ``vsdisk`` are shell scripts; they run here on
the host's ``sh`` against a made-up ``/sys/block`` (the ``VSGUEST_SYS`` and
``VSGUEST_RUN`` overrides), so each contract line is checked for what makes
it appear. The integration test (tests/integration/guest/) boots the real
image.
"""

import os
import re
import struct
import subprocess

import pytest

from volumesvc_aio import guest_image

GUEST = guest_image.GUEST_DIR
VOLUME_ID = "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"


# -- cache key ----------------------------------------------------------------

def test_cache_key_ignores_order_and_follows_every_input():
    versions = {"linux-image-6.1.0-57-cloud-amd64": "6.1.192-3", "busybox-static": "1:1.35.0-4"}
    files = {"guest/init": b"#!/bin/sh\n", "guest_image.py": b"code"}
    key = guest_image.cache_key(versions, files)
    assert key == guest_image.cache_key(dict(reversed(versions.items())),
                                        dict(reversed(files.items())))
    assert re.fullmatch(r"[0-9a-f]{16}", key)
    changed = [
        guest_image.cache_key({**versions, "busybox-static": "1:1.36.1-1"}, files),
        guest_image.cache_key({**versions, "host:syslinux": "3:6.04"}, files),
        guest_image.cache_key(versions, {**files, "guest/init": b"#!/bin/sh\n\n"}),
        guest_image.cache_key(versions, {"guest/init2": files["guest/init"],
                                         "guest_image.py": files["guest_image.py"]}),
    ]
    assert key not in changed and len(set(changed)) == len(changed)


def test_own_files_cover_the_builder_and_every_guest_script():
    files = guest_image.own_files()
    assert set(files) == {"guest_image.py", *(f"guest/{n}" for n in guest_image.GUEST_FILES)}
    for name in guest_image.GUEST_FILES:
        with open(os.path.join(GUEST, name), "rb") as f:
            assert files[f"guest/{name}"] == f.read()


# -- kernel modules -----------------------------------------------------------

def _module(depends):
    """The bytes of a kernel module's .modinfo section as the kernel build lays it out."""
    return (b"\x7fELF...\0license=GPL\0" + f"depends={depends}".encode()
            + b"\0retpoline=Y\0name=x\0")


def test_modinfo_depends_reads_the_embedded_string():
    assert guest_image.modinfo_depends(_module("scsi_mod,virtio_ring,virtio")) == [
        "scsi_mod", "virtio_ring", "virtio"]
    assert guest_image.modinfo_depends(_module("")) == []
    assert guest_image.modinfo_depends(b"\0license=GPL\0name=x\0") == []


# The dependencies of Debian 12's cloud kernel modules (their depends= strings).
CLOUD_KERNEL = {
    "virtio_ring": [], "virtio": ["virtio_ring"], "virtio_pci_modern_dev": [],
    "virtio_pci_legacy_dev": [],
    "virtio_pci": ["virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio"],
    "scsi_common": [], "scsi_mod": ["scsi_common"],
    "virtio_scsi": ["scsi_mod", "virtio_ring", "virtio"], "sd_mod": ["scsi_mod"],
    "cdrom": [], "sr_mod": ["scsi_mod", "cdrom", "scsi_common"], "isofs": ["cdrom"],
    "virtio_blk": ["virtio", "virtio_ring"], "libata": ["scsi_mod", "scsi_common"],
    "ata_piix": ["libata"], "fat": [], "vfat": ["fat"], "nls_cp437": [], "nls_ascii": [],
    "unrelated": [],
}


def test_module_order_loads_each_module_after_what_it_needs():
    order = guest_image.module_order(guest_image.GUEST_MODULES, CLOUD_KERNEL)
    assert len(order) == len(set(order))
    assert set(guest_image.GUEST_MODULES) <= set(order)
    assert "unrelated" not in order
    for name in order:
        for needed in CLOUD_KERNEL[name]:
            assert order.index(needed) < order.index(name), (needed, name)


def test_module_order_refuses_a_missing_module_and_a_cycle():
    with pytest.raises(ValueError, match="ahci is not in the kernel package"):
        guest_image.module_order(["ahci"], CLOUD_KERNEL)
    with pytest.raises(ValueError, match="cycle"):
        guest_image.module_order(["a"], {"a": ["b"], "b": ["a"]})


def test_module_order_file_gives_scsi_a_synchronous_scan():
    text = guest_image.module_order_file(["scsi_common", "scsi_mod", "sd_mod"])
    assert text == "scsi_common\nscsi_mod scan=sync\nsd_mod\n"


# -- initramfs, disk, boot loader -----------------------------------------------

def _read_newc(data):
    """(name, mode, rdev, body) of each member of a newc cpio archive."""
    members, at = [], 0
    while True:
        assert data[at:at + 6] == b"070701"
        fields = [int(data[at + 6 + 8 * i:at + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = fields[11], fields[6]
        at += 110
        name = data[at:at + namesize - 1].decode()
        at += namesize + (-(110 + namesize) % 4)
        body = data[at:at + filesize]
        at += filesize + (-filesize % 4)
        if name == "TRAILER!!!":
            assert at == len(data)
            return members
        members.append((name, fields[1], (fields[9], fields[10]), body))


def test_newc_archive_holds_files_links_directories_and_devices():
    archive = guest_image.newc_archive([
        ("bin", 0o40755, b""), ("bin/busybox", 0o100755, b"\x7fELF" * 3),
        ("bin/sh", 0o120777, "busybox"), ("dev/console", 0o20600, (5, 1)),
        ("lib/modules/order", 0o100644, "virtio\n")])
    assert len(archive) % 4 == 0
    assert _read_newc(archive) == [
        ("bin", 0o40755, (0, 0), b""), ("bin/busybox", 0o100755, (0, 0), b"\x7fELF" * 3),
        ("bin/sh", 0o120777, (0, 0), b"busybox"), ("dev/console", 0o20600, (5, 1), b""),
        ("lib/modules/order", 0o100644, (0, 0), b"virtio\n")]


def test_mbr_has_the_boot_code_one_active_partition_and_the_signature():
    sector = guest_image.mbr(b"\xfa" * 440, 2048, 36864, 0x0E)
    assert len(sector) == 512 and sector[:440] == b"\xfa" * 440
    status, ptype = sector[446], sector[450]
    start, count = struct.unpack("<II", sector[454:462])
    assert (status, ptype, start, count) == (0x80, 0x0E, 2048, 36864)
    assert sector[462:510] == bytes(48) and sector[510:] == b"\x55\xaa"
    with pytest.raises(ValueError):
        guest_image.mbr(b"\0" * 441, 2048, 1, 0x0E)


def test_partition_leaves_room_and_is_whole_mebibytes():
    for payload in (1, 15_861_571, 40 << 20):
        sectors = guest_image.partition_sectors(payload)
        assert sectors * 512 % (1 << 20) == 0
        assert sectors * 512 >= payload + (1 << 20)


def test_boot_loader_boots_the_kernel_with_its_console_on_the_first_serial_port():
    cfg = guest_image.syslinux_cfg()
    assert "LINUX /vmlinuz" in cfg and "INITRD /initrd" in cfg
    append = re.search(r"APPEND (.*)", cfg).group(1).split()
    assert "console=ttyS0" in append
    assert "TIMEOUT 0" in cfg and "PROMPT 0" in cfg


# -- the guest's own scripts: the console contract -------------------------------

def test_init_says_ready_after_the_config_drive_and_before_user_data():
    with open(os.path.join(GUEST, "init")) as f:
        init = f.read()
    first_report = init.index("vsguest-watch --once")
    found = init.index('vs_say "config-drive found=$found"')
    watcher = init.index("vsguest-watch &")
    ready = init.index('vs_say "ready"')
    start = init.index('vs_say "user-data start"')
    rc = init.index('vs_say "user-data rc=$?"')
    assert first_report < found < watcher < ready < start < rc
    assert "LABEL=config-2" in init and "openstack/latest/user_data" in init
    assert 'head -c 2 "$user_data")" = "#!"' in init
    # Every module named in the image's order file is loaded from it.
    assert "/lib/modules/order" in init


class FakeSys:
    """A /sys/block of made-up disks the guest's scripts read as the kernel's."""

    def __init__(self, root):
        self.root = root
        self.seq = 0
        os.makedirs(os.path.join(root, "sys", "block"))

    def add(self, name, size, *, ro=0, serial=None, vpd_serial=None):
        self.seq += 1
        path = os.path.join(self.root, "sys", "block", name)
        os.makedirs(os.path.join(path, "device"))
        self._write(path, "diskseq", f"{self.seq}\n")
        self.set(name, size=size, ro=ro)
        if serial is not None:  # virtio-blk
            self._write(path, "serial", serial + "\n")
        if vpd_serial is not None:  # SCSI: unit serial number VPD page
            page = bytes([0, 0x80, 0, len(vpd_serial)]) + vpd_serial.encode()
            with open(os.path.join(path, "device", "vpd_pg80"), "wb") as f:
                f.write(page)

    def set(self, name, *, size=None, ro=None):
        path = os.path.join(self.root, "sys", "block", name)
        if size is not None:
            self._write(path, "size", f"{size}\n")
        if ro is not None:
            self._write(path, "ro", f"{ro}\n")

    def remove(self, name):
        path = os.path.join(self.root, "sys", "block", name)
        for dirpath, _dirs, files in os.walk(path, topdown=False):
            for f in files:
                os.unlink(os.path.join(dirpath, f))
            os.rmdir(dirpath)

    @staticmethod
    def _write(path, name, text):
        with open(os.path.join(path, name), "w") as f:
            f.write(text)

    def run(self, script, *args):
        env = dict(os.environ, VSGUEST_SYS=os.path.join(self.root, "sys"),
                   VSGUEST_RUN=os.path.join(self.root, "run"),
                   VSGUEST_LIB=os.path.join(GUEST, "vsguest.sh"))
        return subprocess.run(["sh", os.path.join(GUEST, script), *args], env=env,
                              capture_output=True, text=True, timeout=30)

    def watch(self):
        result = self.run("vsguest-watch", "--once")
        assert result.returncode == 0 and not result.stderr, result
        return result.stdout.splitlines()


@pytest.fixture
def fake_sys(tmp_path):
    return FakeSys(str(tmp_path))


def test_watcher_reports_disks_as_they_come_change_and_go(fake_sys):
    fake_sys.add("sda", 2097152, vpd_serial="root-volume")
    fake_sys.add("sdb", 2097152, vpd_serial=VOLUME_ID)
    fake_sys.add("vda", 65536, ro=1, serial=VOLUME_ID[:20])
    assert fake_sys.watch() == [
        "VSGUEST disk name=sda serial=root-volume size=2097152 ro=0",
        f"VSGUEST disk name=sdb serial={VOLUME_ID} size=2097152 ro=0",
        f"VSGUEST disk name=vda serial={VOLUME_ID[:20]} size=65536 ro=1"]
    # Nothing changed: nothing printed.
    assert fake_sys.watch() == []
    # An extend, then a disk made read-only.
    fake_sys.set("sdb", size=4194304)
    assert fake_sys.watch() == [
        f"VSGUEST disk name=sdb serial={VOLUME_ID} size=4194304 ro=0"]
    fake_sys.set("sda", ro=1)
    assert fake_sys.watch() == ["VSGUEST disk name=sda serial=root-volume size=2097152 ro=1"]
    # A detach.
    fake_sys.remove("sdb")
    assert fake_sys.watch() == [f"VSGUEST gone name=sdb serial={VOLUME_ID}"]
    assert fake_sys.watch() == []


def test_watcher_tells_a_new_disk_under_a_name_that_was_just_freed(fake_sys):
    fake_sys.add("sdb", 2097152, vpd_serial="first")
    fake_sys.watch()
    # Detached and another attached between two passes: same name and size,
    # a new diskseq.
    fake_sys.remove("sdb")
    fake_sys.add("sdb", 2097152, vpd_serial="second")
    assert fake_sys.watch() == ["VSGUEST gone name=sdb serial=first",
                                "VSGUEST disk name=sdb serial=second size=2097152 ro=0"]


def test_watcher_skips_cd_roms_and_strips_the_vpd_padding(fake_sys):
    fake_sys.add("sr0", 1000)
    fake_sys.add("sdc", 8, vpd_serial="  padded-serial  ")
    assert fake_sys.watch() == ["VSGUEST disk name=sdc serial=padded-serial size=8 ro=0"]


def test_vsdisk_finds_a_volume_by_its_id_on_either_bus(fake_sys):
    fake_sys.add("sda", 2097152, vpd_serial="root-volume")
    fake_sys.add("sdb", 2097152, vpd_serial=VOLUME_ID)
    other = "9d8c7b6a-5f4e-4d3c-2b1a-0f9e8d7c6b5a"
    fake_sys.add("vda", 65536, serial=other[:20])
    for query, device in ((VOLUME_ID, "/dev/sdb"), (VOLUME_ID[:8], "/dev/sdb"),
                          (other, "/dev/vda"), ("root-volume", "/dev/sda")):
        result = fake_sys.run("vsdisk", query)
        assert (result.returncode, result.stdout) == (0, device + "\n"), query
    assert fake_sys.run("vsdisk", "0000").returncode == 1
    fake_sys.add("sdc", 8, vpd_serial="root-volume-copy")
    ambiguous = fake_sys.run("vsdisk", "root")
    assert ambiguous.returncode == 2 and "several disks" in ambiguous.stderr
    assert fake_sys.run("vsdisk").returncode == 64
