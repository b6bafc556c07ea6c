"""The guest image: a bootable raw disk built from Debian 12 packages only.

The all-in-one's starter image has to be a real guest so that what the
service does to a server's disks can be seen from inside it (its serial
console says what it sees; doc/source/admin/guest-image.rst). Nothing is
downloaded but Debian packages: the cloud kernel and ``busybox-static`` are
fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` (nothing
is installed into the host for the guest). The host's ``syslinux``,
``mtools`` and ``dosfstools`` make the disk without mounting anything: an MBR
with syslinux's boot code, one FAT partition written through mtools, holding
the kernel, an initramfs of busybox plus the virtio, SCSI and CD-ROM drivers,
and syslinux itself.

The image is built once per set of inputs (package versions, the host's
syslinux, this module and the guest's scripts) and kept under
``~/.cache/volumesvc/guest/<key>/``: a new kernel in the archive or a change
to the scripts gives a new key and a new build.

``python -m volumesvc_aio.guest_image`` builds (or finds) it and prints its path.
"""

import argparse
import fcntl
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from volumesvc_aio import system

# The meta package follows Debian's current cloud kernel; it names the real
# kernel package as its one dependency.
KERNEL_META = "linux-image-cloud-amd64"
BUSYBOX = "busybox-static"
# The host's tools that write the disk (tools/dev.sh installs them too).
HOST_PACKAGES = ("syslinux", "syslinux-common", "mtools", "dosfstools")
MBR_CODE = "/usr/lib/syslinux/mbr/mbr.bin"

# The drivers the guest loads, each after what it depends on (the order is
# worked out from the modules themselves): virtio PCI, the virtio-scsi bus
# the compute puts volumes on and its disks and CD-ROMs, virtio-blk, the
# IDE/ATA CD-ROM of a pc machine, and the two filesystems a config drive
# comes in (vfat also needs its default code page and character set).
GUEST_MODULES = ("virtio_pci", "virtio_scsi", "sd_mod", "sr_mod", "virtio_blk",
                 "ata_piix", "isofs", "vfat", "nls_cp437", "nls_ascii")
# scan=sync: a SCSI bus's disks exist when its driver's insmod returns, so
# the boot's first disk report and the config drive search see them.
MODULE_ARGS = {"scsi_mod": "scan=sync"}
KERNEL_ARGS = "console=ttyS0 quiet"

# The guest's own files (package data beside this module) and where they go.
GUEST_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest")
GUEST_FILES = {"init": "init", "vsguest.sh": "lib/vsguest.sh",
               "vsdisk": "bin/vsdisk", "vsguest-watch": "bin/vsguest-watch"}

SECTOR = 512
# The partition starts at 1 MiB, as partitioning tools align it.
PARTITION_START = 2048
IMAGE_NAME = "disk.raw"


def default_cache_dir():
    """``$XDG_CACHE_HOME/volumesvc/guest`` (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "volumesvc", "guest")


# -- pure parts ---------------------------------------------------------------

def cache_key(package_versions, own_files):
    """A short hash naming one build: what it was made from, and by what code.

    ``package_versions``: {package: version}; ``own_files``: {name: bytes} of
    the builder and the guest's scripts. Any change to either names another
    build; the order of the dictionaries does not matter.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps(sorted(package_versions.items())).encode())
    for name in sorted(own_files):
        digest.update(b"\0file\0" + name.encode() + b"\0")
        digest.update(hashlib.sha256(own_files[name]).digest())
    return digest.hexdigest()[:16]


def modinfo_depends(module_bytes):
    """The modules a kernel module needs, from its ``depends=`` modinfo string.

    The host has no ``modinfo`` for a kernel it does not run, and the .deb
    ships no modules.dep (depmod writes it at install time), so this reads
    the string the kernel's build embedded in the module.
    """
    match = re.search(rb"(?:^|\0)depends=([^\0]*)\0", module_bytes)
    if match is None or not match.group(1):
        return []
    return match.group(1).decode().split(",")


def module_order(wanted, depends):
    """``wanted`` and everything they need, each after its dependencies.

    ``depends``: {module: [modules it needs]}. Raises ValueError for a module
    with no entry (not in the kernel package) or a dependency cycle.
    """
    order, done, visiting = [], set(), set()

    def visit(name):
        if name in done:
            return
        if name in visiting:
            raise ValueError(f"module dependency cycle through {name}")
        if name not in depends:
            raise ValueError(f"module {name} is not in the kernel package")
        visiting.add(name)
        for needed in depends[name]:
            visit(needed)
        visiting.discard(name)
        done.add(name)
        order.append(name)

    for name in wanted:
        visit(name)
    return order


def module_order_file(order, module_args=MODULE_ARGS):
    """The ``/lib/modules/order`` the guest's init loads, one module a line."""
    return "".join(f"{name} {module_args.get(name, '')}".rstrip() + "\n" for name in order)


def newc_archive(entries):
    """A cpio archive in the kernel's initramfs format ("newc", no CRC).

    ``entries``: (path, mode, data) tuples in order: ``mode`` carries the file
    type (``0o100755`` a file, ``0o40755`` a directory, ``0o120777`` a
    symlink whose data is its target, ``0o20600`` a character device whose
    data is ``(major, minor)``). Written here because the host has no cpio.
    """
    out = bytearray()

    def field(value):
        return b"%08X" % value

    def pad():
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (path, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], 1):
        rdev = (0, 0)
        if (mode & 0o170000) == 0o020000:
            rdev, data = data, b""
        elif isinstance(data, str):
            data = data.encode()
        name = path.encode() + b"\0"
        out += b"070701" + b"".join(field(v) for v in (
            ino if path != "TRAILER!!!" else 0, mode, 0, 0, 1, 0, len(data),
            0, 0, rdev[0], rdev[1], len(name), 0))
        out += name
        pad()
        out += data
        pad()
    return bytes(out)


def mbr(boot_code, start, sectors, partition_type):
    """Sector 0 of the disk: syslinux's boot code and one active partition.

    The CHS fields hold the "use LBA" marker values; SeaBIOS and syslinux's
    MBR code use the LBA fields.
    """
    if len(boot_code) > 440:
        raise ValueError("MBR boot code longer than 440 bytes")
    sector = bytearray(SECTOR)
    sector[:len(boot_code)] = boot_code
    entry = (bytes([0x80, 0xFE, 0xFF, 0xFF, partition_type, 0xFE, 0xFF, 0xFF])
             + start.to_bytes(4, "little") + sectors.to_bytes(4, "little"))
    sector[446:462] = entry
    sector[510:512] = b"\x55\xaa"
    return bytes(sector)


def syslinux_cfg(kernel_args=KERNEL_ARGS):
    """syslinux's configuration: boot the one kernel at once, no menu."""
    return ("DEFAULT vsguest\nPROMPT 0\nTIMEOUT 0\n"
            "LABEL vsguest\n  LINUX /vmlinuz\n  INITRD /initrd\n"
            f"  APPEND {kernel_args}\n")


def partition_sectors(payload_bytes):
    """The FAT partition for ``payload_bytes`` of files: whole MiB, room for FAT's tables."""
    mib = 1 << 20
    wanted = payload_bytes + payload_bytes // 16 + mib
    return -(-wanted // mib) * mib // SECTOR


# -- the build ---------------------------------------------------------------

def own_files():
    """This module and the guest's scripts, as they go into the cache key."""
    files = {"guest_image.py": _read(os.path.abspath(__file__))}
    for name in GUEST_FILES:
        files[f"guest/{name}"] = _read(os.path.join(GUEST_DIR, name))
    return files


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _run(argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600,
                          **kwargs).stdout


def candidate_versions():
    """The Debian packages the image is made from, with the versions apt would fetch."""
    def candidate(package):
        out = _run(["apt-cache", "policy", package])
        match = re.search(r"Candidate:\s*(\S+)", out)
        if match is None or match.group(1) == "(none)":
            raise RuntimeError(f"apt knows no {package}: run apt-get update")
        return match.group(1)

    meta_version = candidate(KERNEL_META)
    depends = _run(["apt-cache", "show", f"{KERNEL_META}={meta_version}"])
    match = re.search(r"^Depends:\s*(linux-image-\S+)", depends, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{KERNEL_META} {meta_version} names no kernel package")
    kernel = match.group(1)
    versions = {kernel: candidate(kernel), BUSYBOX: candidate(BUSYBOX)}
    # The host's syslinux writes the boot sector and ldlinux: part of the build.
    for package in ("syslinux", "syslinux-common"):
        versions[f"host:{package}"] = _run(
            ["dpkg-query", "-W", "-f=${Version}", package]).strip()
    return versions


def ensure_image(cache_dir=None, log=None):
    """The path of the guest image for today's inputs, built if not yet cached.

    Safe to call from several processes at once: one builds, the others wait
    on the cache's lock and find its result.
    """
    cache_dir = cache_dir or default_cache_dir()
    system.apt_install(HOST_PACKAGES)
    versions = candidate_versions()
    key = cache_key(versions, own_files())
    target = os.path.join(cache_dir, key)
    path = os.path.join(target, IMAGE_NAME)
    if os.path.exists(path):
        return path
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            return path
        if log:
            log(f"building the guest image from {', '.join(sorted(versions))} "
                f"into {target}")
        work = tempfile.mkdtemp(prefix=".build-", dir=cache_dir)
        try:
            info = build(work, versions)
            with open(os.path.join(work, "image.json"), "w") as f:
                json.dump({"key": key, "packages": versions, **info}, f, indent=2)
            os.replace(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return path


def build(work, versions):
    """Fetch, unpack and assemble the image in ``work``; returns its sizes."""
    debs = os.path.join(work, "debs")
    root = os.path.join(work, "root")
    os.makedirs(debs)
    packages = [f"{name}={version}" for name, version in versions.items()
                if not name.startswith("host:")]
    # NOTE: apt's download sandbox user cannot write into root's cache; the
    # files are only read by dpkg-deb below.
    _run(["apt-get", "-q", "-o", "APT::Sandbox::User=root", "download", *packages],
         cwd=debs)
    for deb in sorted(os.listdir(debs)):
        _run(["dpkg-deb", "-x", os.path.join(debs, deb), root])
    kernel, modules_dir = _kernel_files(root)
    initrd = gzip.compress(newc_archive(initramfs_entries(root, modules_dir)), 9, mtime=0)
    files = {"vmlinuz": _read(kernel), "initrd": initrd,
             "syslinux.cfg": syslinux_cfg().encode()}
    image = os.path.join(work, IMAGE_NAME)
    write_disk(image, files)
    shutil.rmtree(debs)
    shutil.rmtree(root)
    return {"bytes": os.path.getsize(image), "kernel_bytes": len(files["vmlinuz"]),
            "initrd_bytes": len(initrd)}


def _kernel_files(root):
    boot = os.path.join(root, "boot")
    kernels = [n for n in os.listdir(boot) if n.startswith("vmlinuz-")]
    if len(kernels) != 1:
        raise RuntimeError(f"expected one kernel in the package, found {kernels}")
    release = kernels[0][len("vmlinuz-"):]
    return os.path.join(boot, kernels[0]), os.path.join(root, "lib", "modules", release)


def initramfs_entries(root, modules_dir):
    """The initramfs: busybox, the guest's scripts, the drivers and their order."""
    found = {}
    for dirpath, _dirs, names in os.walk(modules_dir):
        for name in names:
            if name.endswith(".ko"):
                found[name[:-3].replace("-", "_")] = os.path.join(dirpath, name)
    depends = {}
    for name, path in found.items():
        depends[name] = [d.replace("-", "_") for d in modinfo_depends(_read(path))]
    order = module_order(GUEST_MODULES, depends)
    entries = [(d, 0o40755, b"") for d in
               ("bin", "dev", "lib", "lib/modules", "proc", "sys", "run", "tmp", "mnt")]
    entries += [("dev/console", 0o20600, (5, 1)),
                ("bin/busybox", 0o100755, _read(os.path.join(root, "bin", "busybox"))),
                ("bin/sh", 0o120777, "busybox")]
    for source, target in GUEST_FILES.items():
        mode = 0o100644 if target.startswith("lib/") else 0o100755
        entries.append((target, mode, _read(os.path.join(GUEST_DIR, source))))
    entries.append(("lib/modules/order", 0o100644, module_order_file(order)))
    for name in order:
        entries.append((f"lib/modules/{name}.ko", 0o100644, _read(found[name])))
    return entries


def write_disk(image, files):
    """An MBR disk with one bootable FAT partition holding ``files`` and syslinux."""
    sectors = partition_sectors(sum(len(data) for data in files.values()))
    offset = PARTITION_START * SECTOR
    with open(image, "wb") as f:
        f.truncate(offset + sectors * SECTOR)
    _run(["mkfs.vfat", "-F", "16", "-n", "VSGUEST", f"--offset={PARTITION_START}", image,
          str(sectors * SECTOR // 1024)])
    staging = os.path.dirname(image)
    for name, data in files.items():
        source = os.path.join(staging, name)
        with open(source, "wb") as f:
            f.write(data)
        _run(["mcopy", "-i", f"{image}@@{offset}", source, f"::{name}"])
        os.unlink(source)
    _run(["syslinux", f"--offset={offset}", "--install", image])
    with open(MBR_CODE, "rb") as f:
        boot_code = f.read()
    with open(image, "r+b") as f:
        # 0x0e: FAT16 with LBA addressing; syslinux does not care which FAT.
        f.write(mbr(boot_code, PARTITION_START, sectors, 0x0E))


def qemu_argv(image, console_log, *, memory_mb=256, devices=()):
    """A plain QEMU command that boots ``image`` as the compute's guests boot.

    The image is the first disk on a virtio-scsi controller (``scsi0``), as
    volumes are; ``snapshot=on`` leaves the shared cached image as built.
    Software emulation on a q35 machine, no network, the console in
    ``console_log``. ``devices``: more QEMU arguments (disks on ``scsi0.0``).
    """
    return ["qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-m", str(memory_mb),
            "-nographic", "-serial", f"file:{console_log}", "-monitor", "none",
            "-nic", "none", "-device", "virtio-scsi-pci,id=scsi0",
            "-drive", f"file={image},format=raw,if=none,id=root,snapshot=on",
            "-device", "scsi-hd,drive=root,bus=scsi0.0,bootindex=1", *devices]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", default=None,
                        help="where built images are kept (default: %(default)s → "
                             "~/.cache/volumesvc/guest)")
    args = parser.parse_args(argv)
    print(ensure_image(args.cache_dir, log=lambda m: print(m, flush=True)))


if __name__ == "__main__":
    main()
