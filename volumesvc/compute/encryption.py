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
from volumesvc.compute import bdm as bdm_mod
from volumesvc.states import task_states
from volumesvc.virt import block_device

LOG = logging.getLogger(__name__)

FRONT_END = "front-end"
#: the driver's method for a disk QEMU decrypts itself (native LUKS)
QEMU = "qemu"


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


def prepare(context, *, cinder, keys, driver, connection_info, volume_id=None):
    """The :class:`Plan` of an encrypted volume, None for one this host leaves alone.

    Raises ``VolumeEncryptionNotSupported`` (400) when the driver cannot
    decrypt the volume, and the key manager adapter's faults (403/400/503)
    when the key cannot be read: all before the volume is connected.
    ``volume_id``: the volume whose key this is, when the connection info's
    serial names another one (a swap's new volume keeps the old serial).
    """
    if not (connection_info.get("data") or {}).get("encrypted"):
        return None
    volume_id = volume_id or block_device.volume_id(connection_info)
    metadata = cinder.get_volume_encryption(context, volume_id)
    if not needs_host(metadata):
        return None
    method = driver.check_volume_encryption(connection_info, metadata)
    key = keys.get_key(context, metadata["encryption_key_id"], volume_id)
    # The driver keys its secret by this id, and records it for the detach.
    return Plan(metadata={**metadata, "volume_id": volume_id}, method=method, key=key,
                passphrase=keymgr.passphrase(key))


def open_volume(driver, connection_info, plan):
    """Give the connected volume its key (records ``connection_info['encryption']``)."""
    if plan is not None:
        driver.attach_encryptor(connection_info, plan.metadata, plan.method, plan.key,
                                plan.passphrase)


def prepare_swap(context, *, cinder, keys, driver, old, new):
    """The :class:`Plan` of a swap's new volume (None if plain); refuses what cannot be swapped.

    ``old`` and ``new``: (volume id, connection info) of each side (the new
    side's info already carries the old serial, so its key is looked up by
    the new volume's id). A volume QEMU decrypts is swapped by a block copy
    through the LUKS layer on either side: QEMU reads the old disk's
    plaintext and writes it through the new volume's own key, so the guest
    keeps its data and the new container never holds it in the clear. A
    volume os-brick decrypts on the host (a dm-crypt mapping) is refused on
    either side: that path has not been proven with a block copy. The
    refusal comes before anything is connected.
    """
    old_volume_id, old_info = old
    new_volume_id, new_info = new
    if (old_info.get("encryption") or {}).get("method") not in (None, QEMU):
        raise exception.EncryptedSwapNotSupported(volume_id=old_volume_id)
    plan = prepare(context, cinder=cinder, keys=keys, driver=driver,
                   connection_info=new_info, volume_id=new_volume_id)
    if plan is not None and plan.method != QEMU:
        raise exception.EncryptedSwapNotSupported(volume_id=new_volume_id)
    return plan


def decrypted_volume_id(connection_info):
    """The volume whose key opens this connection (a swapped-in one keeps an old serial)."""
    return ((connection_info.get("encryption") or {}).get("volume_id")
            or block_device.volume_id(connection_info))


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
    volume_id = decrypted_volume_id(connection_info)
    key = keys.get_key(context, record["encryption_key_id"], volume_id)
    driver.attach_encryptor(connection_info, record, record["method"], key,
                            keymgr.passphrase(key))


def key_to_extend(context, *, keys, driver, connection_info):
    """The key an extend of this attached volume needs; None when the driver needs none.

    Only a volume the host decrypts needs it (os-brick grows its dm-crypt
    mapping with the passphrase); it is read as ``context``'s user with
    what the attach recorded, as :func:`reopen` does.
    """
    if not driver.needs_key_to_extend(connection_info):
        return None
    record = connection_info["encryption"]
    return keys.get_key(context, record["encryption_key_id"],
                        decrypted_volume_id(connection_info))


def forget_orphaned_secrets(context, *, driver, conductor, instances):
    """Remove decryption secrets of volumes no server on this host has a BDM of.

    ``instances``: every server of this host. What this catches: a secret
    left by a compute killed between defining it and recording the
    attachment, or by a build that failed after connecting its volumes, or
    by a swap rolled back after its compute died. Nothing is removed while
    a server here swaps a volume.
    The secrets are listed *before* the BDMs: an attach reserves its BDM
    before it defines a secret, so one starting meanwhile is either seen in
    use or not listed yet. Returns the volume ids whose secret went.
    """
    swapping = [i["uuid"] for i in instances
                if i.get("task_state") == task_states.SWAPPING_VOLUME]
    if swapping:
        # The new volume of a swap has its secret before it has a BDM, for
        # the whole copy; the sweep waits for the swap (or its recovery).
        LOG.debug("Not looking for orphaned volume secrets: %s swapping a volume",
                  ", ".join(swapping))
        return []
    held = driver.volume_secret_ids()
    if not held:
        return []
    in_use = set()
    for instance in instances:
        for bdm in bdm_mod.listed(conductor, context, instance["uuid"]):
            if bdm.volume_id:
                in_use.add(bdm.volume_id)
            # A swapped-in volume's secret is its own, whatever the BDM's id
            # became (Cinder's migration completion moves it to the old id).
            if bdm.has_connection:
                in_use.add(decrypted_volume_id(bdm.connection_info))
    orphans = [volume_id for volume_id in held if volume_id not in in_use]
    for volume_id in orphans:
        LOG.info("Removing the decryption secret of volume %s: no server on this host "
                 "uses it", volume_id)
        driver.forget_volume_secret(volume_id)
    return orphans
