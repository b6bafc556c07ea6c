"""The libvirt secret holding the cephx key QEMU needs for RBD volumes.

Cinder's RBD driver only names a secret in ``connection_info``
(``secret_uuid``); the key itself must already be in a libvirt secret of
usage type ``ceph`` on every compute host that may open the volume. Nova
leaves that to the operator. Here a compute configured with the key
(``[libvirt] rbd_keyring`` or ``rbd_key_file``) defines the secret
``[libvirt] rbd_secret_uuid`` itself at start-up, so every compute of a
deployment has it, and sets its value again each time: a rotated key takes
effect at the next start. See ``doc/source/contributor/dependencies.rst``
("Ceph") for why this needs ``qemu:///system``.
"""

import base64
import binascii
import configparser
import uuid as uuidlib
import xml.etree.ElementTree as ET

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)


def read_keyring(path, user=None):
    """(user, base64 key) of ``client.<user>`` in the Ceph keyring at ``path``.

    Without ``user`` the keyring must hold exactly one ``client.*`` entry.
    """
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_string(f.read(), source=path)
    except (OSError, configparser.Error) as exc:
        raise exception.ConfigInvalid(
            reason=f"[libvirt] rbd_keyring {path}: {exc}") from exc
    if user:
        entity = f"client.{user}"
    else:
        clients = [s for s in parser.sections() if s.startswith("client.")]
        if len(clients) != 1:
            raise exception.ConfigInvalid(
                reason=f"[libvirt] rbd_keyring {path} holds {len(clients)} client entries; "
                       f"set [libvirt] rbd_user to choose one")
        entity = clients[0]
    if not parser.has_option(entity, "key"):
        raise exception.ConfigInvalid(
            reason=f"[libvirt] rbd_keyring {path} has no key for {entity}")
    return entity.removeprefix("client."), parser.get(entity, "key").strip()


def read_key_file(path):
    """The base64 key in ``path`` (a file holding only the key)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError as exc:
        raise exception.ConfigInvalid(reason=f"[libvirt] rbd_key_file {path}: {exc}") from exc


def decode_key(key, origin):
    """The raw bytes of a base64 cephx key: what the libvirt secret must hold.

    The base64 text itself as the value makes QEMU fail to connect with
    "Invalid argument" at attach time, far from the cause.
    """
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise exception.ConfigInvalid(reason=f"{origin}: not a base64 cephx key") from exc
    if not raw:
        raise exception.ConfigInvalid(reason=f"{origin}: empty cephx key")
    return raw


def configured_key(libvirt_conf):
    """(user, raw key) from ``[libvirt]``, or None when no key source is set."""
    keyring, key_file = libvirt_conf.rbd_keyring, libvirt_conf.rbd_key_file
    if keyring and key_file:
        raise exception.ConfigInvalid(
            reason="[libvirt] rbd_keyring and rbd_key_file are both set; choose one")
    if keyring:
        user, key = read_keyring(keyring, libvirt_conf.rbd_user)
        return user, decode_key(key, f"[libvirt] rbd_keyring {keyring}")
    if key_file:
        if not libvirt_conf.rbd_user:
            raise exception.ConfigInvalid(
                reason="[libvirt] rbd_key_file needs rbd_user (whose key it is)")
        return libvirt_conf.rbd_user, decode_key(read_key_file(key_file),
                                                 f"[libvirt] rbd_key_file {key_file}")
    return None


def secret_xml(secret_uuid, user):
    root = ET.Element("secret", ephemeral="no", private="yes")
    ET.SubElement(root, "uuid").text = secret_uuid
    usage = ET.SubElement(root, "usage", type="ceph")
    # NOTE: libvirt wants every ceph usage name unique on a host; with the
    # UUID in it, several deployments (each its own secret) share one libvirtd.
    ET.SubElement(usage, "name").text = f"client.{user} {secret_uuid}"
    return ET.tostring(root, encoding="unicode")


def _usage_type(secret):
    usage = ET.fromstring(secret.XMLDesc(0)).find("usage")
    return usage.get("type") if usage is not None else None


def ensure_ceph_secret(conn, libvirt, secret_uuid, user, raw_key):
    """Define (if missing) the ceph secret ``secret_uuid`` and set its value to ``raw_key``.

    Idempotent: run at every compute start. An existing secret of another
    usage type under that UUID is a configuration error, not overwritten.
    """
    try:
        secret = conn.secretLookupByUUIDString(secret_uuid)
    except libvirt.libvirtError as exc:
        code = exc.get_error_code()
        if code == libvirt.VIR_ERR_NO_SUPPORT:
            raise exception.ConfigInvalid(
                reason=f"the libvirt connection has no secret API ({exc}); RBD volumes "
                       f"with cephx need [libvirt] connection_uri = qemu:///system") from exc
        if code != libvirt.VIR_ERR_NO_SECRET:
            raise
        secret = None
    if secret is None:
        try:
            secret = conn.secretDefineXML(secret_xml(secret_uuid, user), 0)
        except libvirt.libvirtError as exc:
            # e.g. another secret already uses the usage name "client.<user> <uuid>"
            raise exception.ConfigInvalid(
                reason=f"cannot define libvirt secret {secret_uuid}: {exc}") from exc
        LOG.info("Defined libvirt ceph secret %s for client.%s", secret_uuid, user)
    elif _usage_type(secret) != "ceph":
        raise exception.ConfigInvalid(
            reason=f"libvirt secret {secret_uuid} exists with usage type "
                   f"{_usage_type(secret)!r}, not 'ceph'")
    secret.setValue(raw_key, 0)
    return secret


def ensure_configured_secret(conn, libvirt, libvirt_conf):
    """The compute's start-up step: the secret ``[libvirt]`` describes, if any.

    Nothing to do without a key source (the operator then manages the secret,
    as with Nova).
    """
    configured = configured_key(libvirt_conf)
    if configured is None:
        return None
    secret_uuid = libvirt_conf.rbd_secret_uuid
    if not secret_uuid:
        raise exception.ConfigInvalid(
            reason="[libvirt] rbd_keyring/rbd_key_file need rbd_secret_uuid (the UUID "
                   "Cinder's RBD backend names as its rbd_secret_uuid)")
    try:
        secret_uuid = str(uuidlib.UUID(secret_uuid))
    except ValueError:
        raise exception.ConfigInvalid(
            reason=f"[libvirt] rbd_secret_uuid {secret_uuid!r} is not a UUID") from None
    user, raw_key = configured
    return ensure_ceph_secret(conn, libvirt, secret_uuid, user, raw_key)
