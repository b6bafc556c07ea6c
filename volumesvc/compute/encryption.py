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
server's delete, the undo of a failed attach.
"""

import dataclasses

from volumesvc import keymgr
from volumesvc.virt import block_device

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
