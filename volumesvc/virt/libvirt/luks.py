"""libvirt secrets holding the passphrases of volumes QEMU decrypts itself (native LUKS).

One secret per volume on each host that opens it: usage type ``volume``
with the volume id as usage id, so it is found again by volume (every
server on this host sharing a multiattach volume uses the same secret, and
the reconciliation can tell which volume a secret belonged to). Its value
is the passphrase made from the volume's key (``volumesvc.keymgr``); the
``<disk>``'s ``<encryption format='luks'>`` names the secret's UUID.

The description names the host that defined the secret: several computes
may share one libvirt daemon (the all-in-one's computes on ``qemu:///system``),
and each must sweep only the secrets it defined, never a volume another
compute on that daemon is opening (before, a compute starting there took the
secret of a server another one was building, whose domain then failed to
start). A secret whose description names no host counts as this host's.

The secret is private (libvirt never shows its value) and persistent, so a
restarted libvirtd or a hard reboot of the guest still finds it; it goes
with the host connection of the volume (``LibvirtDriver.disconnect_volume``)
or when the reconciliation finds no attachment left for it.
"""

import xml.etree.ElementTree as ET

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

USAGE_TYPE = "volume"


_HOST_MARK = " on host "


def secret_xml(volume_id, host=None):
    root = ET.Element("secret", ephemeral="no", private="yes")
    ET.SubElement(root, "description").text = (
        f"passphrase of volume {volume_id}" + (f"{_HOST_MARK}{host}" if host else ""))
    usage = ET.SubElement(root, "usage", type=USAGE_TYPE)
    ET.SubElement(usage, "volume").text = volume_id
    return ET.tostring(root, encoding="unicode")


def find(conn, libvirt, volume_id):
    """The volume's secret on this host, or None."""
    try:
        return conn.secretLookupByUsage(libvirt.VIR_SECRET_USAGE_TYPE_VOLUME, volume_id)
    except libvirt.libvirtError as exc:
        if exc.get_error_code() == libvirt.VIR_ERR_NO_SECRET:
            return None
        raise


def ensure(conn, libvirt, volume_id, passphrase, host=None):
    """Define (or find) the volume's secret, set its value; return its UUID.

    Setting the value again on an existing secret is harmless: every
    connection of a volume has the one key. ``host``: the compute defining it.
    """
    secret = find(conn, libvirt, volume_id)
    if secret is None:
        secret = conn.secretDefineXML(secret_xml(volume_id, host), 0)
        LOG.info("Defined the libvirt secret of volume %s", volume_id)
    try:
        secret.setValue(passphrase.encode("utf-8"), 0)
    except libvirt.libvirtError:
        # A secret without its value must not stay behind.
        undefine(conn, libvirt, volume_id)
        raise
    return secret.UUIDString()


def undefine(conn, libvirt, volume_id):
    """Remove the volume's secret; True if there was one."""
    secret = find(conn, libvirt, volume_id)
    if secret is None:
        return False
    try:
        secret.undefine()
    except libvirt.libvirtError as exc:
        if exc.get_error_code() != libvirt.VIR_ERR_NO_SECRET:
            raise
        return False
    LOG.info("Undefined the libvirt secret of volume %s", volume_id)
    return True


def _defined_by(secret):
    """The host named in the secret's description, None if it names none."""
    description = ET.fromstring(secret.XMLDesc(0)).findtext("description") or ""
    _, mark, host = description.partition(_HOST_MARK)
    return host if mark else None


def volume_ids(conn, libvirt, host=None):
    """Volume ids of the volume secrets on this daemon; with ``host``, only its own.

    A secret another host defined is left out (see the module's docstring).
    """
    ids = []
    for secret in conn.listAllSecrets(0):
        if secret.usageType() != libvirt.VIR_SECRET_USAGE_TYPE_VOLUME:
            continue
        if host is not None and _defined_by(secret) not in (None, host):
            continue
        ids.append(secret.usageID())
    return ids
