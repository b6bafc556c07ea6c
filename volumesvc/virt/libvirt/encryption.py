"""Who decrypts an encrypted volume on this host, and how: QEMU or os-brick.

* A disk QEMU opens itself (an RBD image, a file on NFS or the host, the
  all-in-one's ``local`` path): QEMU's native LUKS. The passphrase goes in a
  libvirt secret of the volume's own (:mod:`.luks`), the ``<disk>`` names it.
  QEMU reads LUKS version 1 only, so that is the one provider accepted.
* A host block device os-brick connects (iSCSI, FC, NVMe-oF...): os-brick's
  encryptor opens it with cryptsetup as ``/dev/mapper/crypt-<name>`` and
  points the connection's ``device_path`` there, so QEMU sees plaintext;
  a volume Cinder did not format is formatted on its first attach, as in
  Nova. ``luks``, ``luks2`` and ``plain`` are accepted.

Anything else is refused before the volume is connected
(:func:`check`), never handed to the guest as it is. A volume whose
``control_location`` is ``back-end`` is decrypted by the storage: nothing
to do here.

What was decided is kept in the connection info's ``encryption`` (the
BDM's copy) so detach and domain rebuilds need neither Cinder nor the key
manager: ``method``, the secret's UUID for QEMU, Cinder's metadata without
the key for os-brick. An extend of a volume os-brick opened is the one
later step that needs the key again (:func:`extend`).
"""

import os

from volumesvc import exception
from volumesvc.virt import block_device
from volumesvc.virt.libvirt import luks
from volumesvc.virt.libvirt.volume import brick

QEMU = "qemu"
OS_BRICK = "os-brick"
#: where dm-crypt's mappings appear (os-brick names them crypt-<device name>)
MAPPER_DIR = "/dev/mapper"

#: method -> the providers it can open (canonical names).
PROVIDERS = {QEMU: (brick.LUKS,), OS_BRICK: (brick.LUKS, brick.LUKS2, brick.PLAIN)}
#: the metadata os-brick's encryptors take (never the key itself).
METADATA_KEYS = ("provider", "cipher", "key_size", "control_location", "encryption_key_id")


def check(connection_info, metadata, host_decrypts):
    """The method for this volume, or VolumeEncryptionNotSupported.

    ``host_decrypts``: the volume's driver makes a host block device of it
    (os-brick's encryptor), else QEMU opens it (native LUKS).
    """
    method = OS_BRICK if host_decrypts else QEMU
    provider = brick.provider_format(metadata.get("provider"))
    if provider not in PROVIDERS[method]:
        kind = connection_info.get("driver_volume_type")
        raise exception.VolumeEncryptionNotSupported(
            volume_id=block_device.volume_id(connection_info),
            provider=metadata.get("provider"),
            control_location=metadata.get("control_location"), driver_volume_type=kind,
            reason=(f"a {kind} disk is opened by "
                    f"{'os-brick (cryptsetup)' if host_decrypts else 'QEMU (native LUKS)'}, "
                    f"which takes {', '.join(PROVIDERS[method])}"))
    return method


def _metadata(encryption):
    return {k: encryption.get(k) for k in METADATA_KEYS if encryption.get(k) is not None}


def _already_open(connection_info):
    """True when ``device_path`` already leads to os-brick's plaintext mapping.

    A second server on this host sharing a multiattach volume: the first
    attach opened it. Opening again would fail, and os-brick, seeing no
    LUKS header on the plaintext, would format it.
    """
    path = (connection_info.get("data") or {}).get("device_path")
    if not path:
        return False
    mapper = os.path.join(MAPPER_DIR, f"crypt-{os.path.basename(path)}")
    return os.path.exists(mapper) and os.path.realpath(path) == os.path.realpath(mapper)


def attach(conn, libvirt, connection_info, metadata, method, key, passphrase, host=None):
    """Open the volume for its method; record what was done in ``connection_info``.

    ``host``: this compute's, named in a secret it defines (luks.py).

    The secret is keyed by ``metadata['volume_id']`` when given (a swap's new
    volume, whose connection keeps the old volume's serial), recorded so the
    detach removes that one and not the old volume's.
    """
    volume_id = metadata.get("volume_id") or block_device.volume_id(connection_info)
    record = {"method": method, "volume_id": volume_id, **_metadata(metadata)}
    if method == QEMU:
        try:
            record["secret_uuid"] = luks.ensure(conn, libvirt, volume_id, passphrase, host)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_SUPPORT:
                raise exception.VolumeEncryptionNotSupported(
                    volume_id=volume_id, provider=metadata.get("provider"),
                    control_location=metadata.get("control_location"),
                    driver_volume_type=connection_info.get("driver_volume_type"),
                    reason="this compute's libvirt connection has no secret API "
                           "(QEMU's native LUKS needs [libvirt] connection_uri = "
                           "qemu:///system)") from exc
            raise exception.VirtDriverError(
                reason=f"defining the secret of volume {volume_id} failed: {exc}") from exc
    elif not _already_open(connection_info):
        with brick.errors(f"opening encrypted volume {volume_id}"):
            brick.encryptor(connection_info, _metadata(metadata), key).attach_volume(
                None, **_metadata(metadata))
    connection_info["encryption"] = record


def detach(conn, libvirt, connection_info):
    """Undo :func:`attach` (the host connection goes next); nothing recorded: nothing to do."""
    record = connection_info.get("encryption")
    if not record:
        return
    volume_id = record.get("volume_id") or block_device.volume_id(connection_info)
    if record.get("method") == QEMU:
        try:
            luks.undefine(conn, libvirt, volume_id)
        except libvirt.libvirtError as exc:
            raise exception.VirtDriverError(
                reason=f"undefining the secret of volume {volume_id} failed: {exc}") from exc
    elif record.get("method") == OS_BRICK:
        with brick.errors(f"closing encrypted volume {volume_id}"):
            brick.encryptor(connection_info, _metadata(record)).detach_volume(
                **_metadata(record))


def host_decrypted(connection_info):
    """True when os-brick's dm-crypt mapping on this host decrypts the volume."""
    return (connection_info.get("encryption") or {}).get("method") == OS_BRICK


def extend(connection_info, key):
    """Grow os-brick's dm-crypt mapping to the grown device under it; its new size.

    Why: after the host's rescan the device is bigger but the mapping QEMU
    opened (``/dev/mapper/crypt-<name>``) still has its old size, so the
    guest could not be given more. os-brick's LUKS encryptors resize it
    with ``cryptsetup resize``, which may ask for the passphrase (LUKS2
    keeps the volume key in the kernel's keyring): ``key`` is the volume's,
    read as the user. A ``plain`` mapping os-brick cannot resize: refused
    with a clear error before any command runs.
    """
    record = connection_info.get("encryption") or {}
    volume_id = record.get("volume_id") or block_device.volume_id(connection_info)
    if brick.provider_format(record.get("provider")) == brick.PLAIN:
        raise exception.VirtDriverError(
            reason=f"encrypted volume {volume_id} is a plain dm-crypt mapping, which "
                   "os-brick cannot resize; detach and attach it again to see its new size")
    with brick.errors(f"resizing the dm-crypt mapping of encrypted volume {volume_id}"):
        size = brick.encryptor(connection_info, _metadata(record), key).extend_volume(
            None, **_metadata(record))
    if not size:
        raise exception.VirtDriverError(
            reason=f"os-brick found no size for the resized dm-crypt mapping of encrypted "
                   f"volume {volume_id}")
    return int(size)
