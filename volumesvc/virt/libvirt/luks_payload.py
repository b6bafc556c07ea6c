"""Where the guest's data starts on a volume QEMU decrypts itself (native LUKS).

Why: the guest of an encrypted volume sees the LUKS payload, the volume less
its header, and QEMU's resize of such a disk sizes the payload and grows
what lies under it to payload plus header. After Cinder has grown the volume
to its new size, asking QEMU for that size would make QEMU grow the file or
the RBD image past what Cinder gave it; the guest must be given the new
size less the header, as Nova does. The header's size depends on who wrote
it (cryptsetup, qemu-img) and on the cipher, so it is read from the volume:

* a file or host block device: its LUKS1 header read in Python
  (:func:`volumesvc.privsep.files.luks_layout`), by the compute when it
  may read the volume, else by volumesvc's privsep daemon (a device
  os-brick connected is root's). Reading 108 bytes needs no ``qemu-img``,
  so the daemon runs no program as root;
* an RBD image: ``qemu-img info``, which reads a LUKS header without its
  key and, with ``--force-share``, while QEMU holds the volume, as the
  compute's own user with the cephx keyring it is given (the install
  guide makes it readable by that user, as Nova's).
"""

import json
import os
import subprocess
import tempfile

from volumesvc import exception
from volumesvc.privsep import files as privsep_files

# qemu-img reads a few KiB of the header; over RBD that is one round trip to
# the OSDs. A minute covers a busy cluster, and an extend waits no longer.
QEMU_IMG_TIMEOUT = 60


def payload_size(conf, disk, connection_info) -> int:
    """Bytes of guest data ``disk`` holds: what QEMU shows the guest of it.

    Read from the volume, not worked out from Cinder's size: Cinder's RBD
    driver (and the all-in-one's file driver) make an encrypted volume of N
    GiB a container whose payload is N GiB, its header on top, while a
    volume formatted in place (cryptsetup, as os-brick does) gives the
    header out of its N GiB.
    """
    return layout(conf, disk, connection_info)[1]


def layout(conf, disk, connection_info) -> tuple[int, int]:
    """(header bytes, payload bytes) of ``disk``'s LUKS container, read in one go.

    After Cinder grew the volume, the payload is what the guest may now be
    given, whichever layout Cinder used (:func:`payload_size`).
    """
    if disk.source_type in ("file", "block") and disk.source:
        try:
            header, payload = privsep_files.as_needed(
                privsep_files.luks_layout, privsep_files.privileged_luks_layout, disk.source)
        except (OSError, ValueError) as exc:
            raise exception.VirtDriverError(
                reason=f"cannot read the LUKS header of {disk.serial}: {exc}") from exc
        return int(header), int(payload)
    info = _luks_info(conf, disk, connection_info)
    return (int(info["format-specific"]["data"]["payload-offset"]),
            int(info["virtual-size"]))


def _luks_info(conf, disk, connection_info) -> dict:
    """``qemu-img info`` of the LUKS container on RBD ``disk``; raises if it holds none."""
    with tempfile.TemporaryDirectory(prefix="vs-luks-") as scratch:
        target = _target(conf, disk, connection_info, scratch)
        try:
            result = subprocess.run(
                ["qemu-img", "info", "--output=json", "--force-share", target],
                capture_output=True, text=True, timeout=QEMU_IMG_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise exception.VirtDriverError(
                reason=f"cannot read the LUKS header of {disk.serial}: {exc}") from exc
    if result.returncode != 0:
        raise exception.VirtDriverError(
            reason=f"cannot read the LUKS header of {disk.serial}: "
                   f"{result.stderr.strip()[-300:]}")
    info = json.loads(result.stdout)
    specific = info.get("format-specific") or {}
    if info.get("format") != "luks" or specific.get("type") != "luks":
        raise exception.VirtDriverError(
            reason=f"volume {disk.serial} is to be decrypted by QEMU but holds no LUKS "
                   f"header (qemu-img sees {info.get('format')!r})")
    return info


def _target(conf, disk, connection_info, scratch):
    """What qemu-img opens: the RBD image with this host's cephx key."""
    if disk.source_protocol == "rbd":
        data = connection_info.get("data") or {}
        hosts = [f"{host}\\:{port}" for host, port in zip(
            data.get("hosts") or [], data.get("ports") or [], strict=False)]
        user = data.get("auth_username") or conf.libvirt.rbd_user
        spec = f"rbd:{data['name']}"
        if user:
            spec += f":id={user}:keyring={_keyring(conf, user, scratch)}"
        if hosts:
            spec += f":mon_host={';'.join(hosts)}"
        return spec
    raise exception.VirtDriverError(
        reason=f"cannot read the LUKS header of volume {disk.serial}: a {disk.source_type} "
               f"disk of protocol {disk.source_protocol}")


def _keyring(conf, user, scratch):
    """A keyring file for ``user``: the configured one, or one made from the key file."""
    if conf.libvirt.rbd_keyring:
        return conf.libvirt.rbd_keyring
    if not conf.libvirt.rbd_key_file:
        raise exception.VirtDriverError(
            reason="reading an encrypted RBD volume's header needs [libvirt] rbd_keyring "
                   "or rbd_key_file")
    with open(conf.libvirt.rbd_key_file, encoding="ascii") as f:
        key = f.read().strip()
    path = os.path.join(scratch, "keyring")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(f"[client.{user}]\n\tkey = {key}\n")
    return path
