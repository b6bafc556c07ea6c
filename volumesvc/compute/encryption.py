"""The compute's part in attaching an encrypted volume: read, check, fetch the key.

Cinder marks an encrypted volume's connection info ``encrypted``. For such
a volume, between Cinder's answer (the connection info) and the host
connection, :func:`prepare` reads the volume's encryption metadata from
Cinder (once per attach), asks the virt driver whether and how it can
decrypt it (refusing before anything is connected or attached), and reads
the key from the key manager as the requesting user. After the connection,
:func:`open_volume` hands the key to the driver (a libvirt secret for
QEMU's native LUKS, os-brick's encryptor for a host block device).

The decryption is closed by the driver with the host connection
(``disconnect_volume``): the last detach of the volume on this host, the
server's delete, the undo of a failed attach. What a killed compute or a
failed build leaves is found by :func:`forget_orphaned_secrets` when the
compute starts and in the periodic reconciliation.
"""

import dataclasses

from oslo_log import log as logging

from volumesvc import exception, keymgr
from volumesvc.virt import block_device

LOG = logging.getLogger(__name__)

FRONT_END = "front-end"


@dataclasses.dataclass
class Plan:
    """How the attach opens one encrypted volume (the key stays in memory only)."""

    metadata: dict
    method: str
    key: object
    passphrase: str = dataclasses.field(repr=False)


def needs_host(metadata):
    """True when this host decrypts: a key, and no back-end ``control_location``."""
    if not metadata or not metadata.get("encryption_key_id"):
        return False
    return (metadata.get("control_location") or FRONT_END).lower() == FRONT_END


def prepare(context, *, cinder, keys, driver, connection_info):
    """The :class:`Plan` of an encrypted volume, None for one this host leaves alone.

    Raises ``VolumeEncryptionNotSupported`` (400) when the driver cannot
    decrypt the volume, and the key manager adapter's faults (403/400/503)
    when the key cannot be read: all before the volume is connected.
    """
    if not (connection_info.get("data") or {}).get("encrypted"):
        return None
    volume_id = block_device.volume_id(connection_info)
    metadata = cinder.get_volume_encryption(context, volume_id)
    if not needs_host(metadata):
        return None
    method = driver.check_volume_encryption(connection_info, metadata)
    key = keys.get_key(context, metadata["encryption_key_id"], volume_id)
    return Plan(metadata=metadata, method=method, key=key, passphrase=keymgr.passphrase(key))


def open_volume(driver, connection_info, plan):
    """Give the connected volume its key (records ``connection_info['encryption']``)."""
    if plan is not None:
        driver.attach_encryptor(connection_info, plan.metadata, plan.method, plan.key,
                                plan.passphrase)


def check_swap(context, cinder, old, new):
    """Refuse a swap of or onto a volume this host decrypts, before anything is connected.

    ``old`` and ``new``: (volume id, connection info) of each side (the new
    side's info already carries the old serial). A block copy between a
    plaintext disk and a LUKS container would write the guest's data
    unencrypted into the container (or hand the guest the ciphertext), so,
    as Nova refuses it with native LUKS, it is refused.
    """
    for volume_id, info in (old, new):
        if info.get("encryption") or (
                (info.get("data") or {}).get("encrypted")
                and needs_host(cinder.get_volume_encryption(context, volume_id))):
            raise exception.EncryptedSwapNotSupported(volume_id=volume_id)


def reopen(context, *, keys, driver, connection_info):
    """Open a volume an earlier attach opened, after connecting it again (reboot, start).

    The host may have lost what the attach made (os-brick's dm-crypt
    mapping, the libvirt secret) with its own restart; opening again is
    harmless when it did not. The key is read anew as ``context``'s user,
    with the metadata the attach recorded (no Cinder call).
    """
    record = connection_info.get("encryption")
    if not record:
        return
    volume_id = block_device.volume_id(connection_info)
    key = keys.get_key(context, record["encryption_key_id"], volume_id)
    driver.attach_encryptor(connection_info, record, record["method"], key,
                            keymgr.passphrase(key))


def forget_orphaned_secrets(context, *, driver, conductor, instances):
    """Remove decryption secrets of volumes no server on this host has a BDM of.

    ``instances``: every server of this host. What this catches: a secret
    left by a compute killed between defining it and recording the
    attachment, or by a build that failed after connecting its volumes.
    The secrets are listed *before* the BDMs: an attach reserves its BDM
    before it defines a secret, so one starting meanwhile is either seen in
    use or not listed yet. Returns the volume ids whose secret went.
    """
    held = driver.volume_secret_ids()
    if not held:
        return []
    in_use = set()
    for instance in instances:
        for bdm in conductor.bdm_list(context, instance_uuid=instance["uuid"]):
            if bdm.get("volume_id"):
                in_use.add(bdm["volume_id"])
    orphans = [volume_id for volume_id in held if volume_id not in in_use]
    for volume_id in orphans:
        LOG.info("Removing the decryption secret of volume %s: no server on this host "
                 "uses it", volume_id)
        driver.forget_volume_secret(volume_id)
    return orphans
