"""The compute's access to files it may not own, each function small and checking its input.

Each is a plain function (:func:`read_tail`, :func:`luks_layout`,
:func:`block_device_size`, :func:`grow_file`) with a privileged twin run in the
``dac_override_pctxt`` daemon. :func:`as_needed` runs the plain one in
the compute and asks the daemon only when the compute's own user is
refused (``PermissionError``): a compute that runs as root, or uses a
file it owns, never starts the daemon, and one that runs unprivileged
crosses to root for exactly those accesses.

Why the checks: file permissions do not bind the daemon, so each function
accepts only the shape of path its caller has a reason to use (a console
log, a disk), answers with no more than it needs (bytes of a console log,
two numbers of a LUKS header, a size) and writes nothing but the one
change it exists for (a regular file made longer, never shorter).
Paths must be absolute and normal (no ``..``), so they are what they say.
"""

import os
import re
import stat
import struct

from volumesvc.privsep import dac_override_pctxt

#: The most of a console log one call may read (ten times the compute's cap).
MAX_TAIL_BYTES = 1 << 20
#: A guest's console log and virtlogd's rotations of it (console.log.0 ...).
_CONSOLE_NAME = re.compile(r"console\.log(\.[0-9]{1,3})?")
#: LUKS version 1's header: magic, version, then at byte 104 the payload's
#: offset in 512-byte sectors (big-endian), as the LUKS1 on-disk format gives.
_LUKS_MAGIC = b"LUKS\xba\xbe"
_LUKS_PAYLOAD_OFFSET = 104
_LUKS_SECTOR = 512
#: Where the host's block devices are (os-brick's paths and their symlinks).
_DEVICE_DIR = "/dev/"


def _check_path(path):
    """``path`` if it is an absolute, normal path, else ValueError."""
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.normpath(path) != path:
        raise ValueError(f"not an absolute normal path: {path!r}")
    return path


def read_tail(path, count):
    """``(the last count bytes of the log at path, how many bytes precede them)``.

    A regular file, opened without following a symlink.
    """
    _check_path(path)
    if not isinstance(count, int) or not 0 < count <= MAX_TAIL_BYTES:
        raise ValueError(f"count must be 1..{MAX_TAIL_BYTES}, not {count!r}")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"not a regular file: {path!r}")
        size = os.lseek(fd, 0, os.SEEK_END)
        start = max(0, size - count)
        return os.pread(fd, count, start), start
    finally:
        os.close(fd)


def luks_layout(path):
    """``(header bytes, payload bytes)`` of the LUKS1 container in the file or device at path.

    The two numbers QEMU's native LUKS uses: the payload starts after the
    header, and the guest sees the rest. Raises ValueError when ``path``
    is neither a regular file nor a block device, or holds no LUKS1 header
    (QEMU decrypts version 1 only, see virt/libvirt/encryption.py).
    """
    _check_path(path)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISBLK(mode)):
            raise ValueError(f"not a file or block device: {path!r}")
        head = os.pread(fd, _LUKS_PAYLOAD_OFFSET + 4, 0)
        size = os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)
    if len(head) < _LUKS_PAYLOAD_OFFSET + 4 or head[:6] != _LUKS_MAGIC:
        raise ValueError(f"no LUKS header in {path!r}")
    (version,) = struct.unpack_from(">H", head, 6)
    if version != 1:
        raise ValueError(f"LUKS version {version} in {path!r}: QEMU reads version 1 only")
    (sectors,) = struct.unpack_from(">I", head, _LUKS_PAYLOAD_OFFSET)
    header = sectors * _LUKS_SECTOR
    if not 0 < header <= size:
        raise ValueError(f"LUKS header of {path!r} claims {header} bytes of {size}")
    return header, size - header


def block_device_size(path):
    """Bytes of the block device at path (a name under /dev, symlinks followed there)."""
    _check_path(path)
    real = os.path.realpath(path)
    if not real.startswith(_DEVICE_DIR):
        raise ValueError(f"not a device under {_DEVICE_DIR}: {path!r}")
    fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if not stat.S_ISBLK(os.fstat(fd).st_mode):
            raise ValueError(f"not a block device: {path!r}")
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def grow_file(path, size):
    """Make the regular file at path ``size`` bytes long if it is shorter; return its size.

    Sparse (the new bytes read as zeros and take no space), never
    shrinking, never through a symlink. A volume's file of Cinder's on the
    host, grown for an extend while its server is stopped.
    """
    _check_path(path)
    if not isinstance(size, int) or size < 0:
        raise ValueError(f"size must be a whole number of bytes, not {size!r}")
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"not a regular file: {path!r}")
        if os.fstat(fd).st_size < size:
            os.ftruncate(fd, size)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


@dac_override_pctxt.entrypoint
def privileged_read_tail(path, count):
    """:func:`read_tail` in the privsep daemon, of a console log only.

    The file must be named ``console.log`` (or a rotation of it,
    ``console.log.N``): the daemon reads no other file of the host this way.
    """
    _check_path(path)
    if not _CONSOLE_NAME.fullmatch(os.path.basename(path)):
        raise ValueError(f"not a console log: {path!r}")
    return read_tail(path, count)


@dac_override_pctxt.entrypoint
def privileged_luks_layout(path):
    """:func:`luks_layout` in the privsep daemon."""
    return luks_layout(path)


@dac_override_pctxt.entrypoint
def privileged_block_device_size(path):
    """:func:`block_device_size` in the privsep daemon."""
    return block_device_size(path)


@dac_override_pctxt.entrypoint
def privileged_grow_file(path, size):
    """:func:`grow_file` in the privsep daemon."""
    return grow_file(path, size)


def as_needed(plain, privileged, *args):
    """``plain(*args)``; if this process may not read the file, ``privileged(*args)``.

    Only a refusal of permission crosses to the daemon; a missing file or
    a rejected argument is the caller's answer as it is.
    """
    try:
        return plain(*args)
    except PermissionError:  # EACCES, EPERM
        return privileged(*args)
