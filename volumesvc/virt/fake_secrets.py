"""The secret driver of the fake libvirt (``fake.py``): libvirtd's secrets, per daemon.

A mixin of ``fake.FakeConnection`` and the secret objects it hands out,
kept apart so that the fake stays within the house's module size. The
embedded driver (``/embed`` URIs) has no secret driver, as libvirt's.
"""

import uuid as uuidlib
import xml.etree.ElementTree as ET
from typing import Any


class SecretTable:
    """The secret calls of a connection, on its daemon's ``secrets`` table."""

    #: the fake binding's module (its errors and XML helpers), set by it
    _binding: Any = None

    def _secrets(self: Any):
        fake = self._binding
        self._check()
        if "/embed" in self.uri:
            raise fake.libvirtError("this function is not supported by the connection driver: "
                               "virSecretLookupByUUIDString", fake.VIR_ERR_NO_SUPPORT)
        return self._state["secrets"]

    def secretLookupByUUIDString(self, uuid):  # noqa: N802
        fake = self._binding
        try:
            return self._secrets()[uuid]
        except KeyError:
            raise fake.libvirtError(f"Secret not found: no secret with matching uuid '{uuid}'",
                               fake.VIR_ERR_NO_SECRET) from None

    def secretDefineXML(self, xml, flags=0):  # noqa: N802
        fake = self._binding
        secrets = self._secrets()
        root = ET.fromstring(xml)
        uuid = root.findtext("uuid") or str(uuidlib.uuid4())
        usage_type = fake._required(root, "usage").get("type")
        # The usage id: a volume secret names its volume, the others a name.
        usage = (usage_type, root.findtext("usage/volume" if usage_type == "volume"
                                           else "usage/name"))
        for other in secrets.values():
            if other.usage == usage and other.UUIDString() != uuid:
                raise fake.libvirtError(f"operation failed: a secret with UUID "
                                   f"{other.UUIDString()} already defined for use with "
                                   f"{usage[1]}", fake.VIR_ERR_OPERATION_FAILED)
        secret = secrets.get(uuid)
        if secret is None:
            secret = secrets[uuid] = FakeSecret(secrets, uuid)
        secret.xml, secret.usage = xml, usage
        return secret

    def secretLookupByUsage(self, usage_type, usage_id):  # noqa: N802
        fake = self._binding
        name = _SECRET_USAGE_NAMES.get(usage_type)
        for secret in list(self._secrets().values()):
            if secret.usage == (name, usage_id):
                return secret
        raise fake.libvirtError(f"Secret not found: no secret with matching usage '{usage_id}'",
                           fake.VIR_ERR_NO_SECRET)

    def listAllSecrets(self, flags=0):  # noqa: N802
        return list(self._secrets().values())


VIR_SECRET_USAGE_TYPE_VOLUME = 1
VIR_SECRET_USAGE_TYPE_CEPH = 2
_SECRET_USAGE_NAMES = {VIR_SECRET_USAGE_TYPE_VOLUME: "volume",
                       VIR_SECRET_USAGE_TYPE_CEPH: "ceph"}


class FakeSecret:
    """A defined libvirt secret; ``value`` is what QEMU would be handed."""

    def __init__(self, table, uuid):
        self._table = table
        self._uuid = uuid
        self.xml = ""
        self.usage = (None, None)
        self.value = None

    def UUIDString(self):  # noqa: N802
        return self._uuid

    def XMLDesc(self, flags=0):  # noqa: N802
        return self.xml

    def usageType(self):  # noqa: N802
        for number, name in _SECRET_USAGE_NAMES.items():
            if name == self.usage[0]:
                return number
        return 0

    def usageID(self):  # noqa: N802
        return self.usage[1]

    def setValue(self, value, flags=0):  # noqa: N802
        if not isinstance(value, bytes):
            raise TypeError("secret value must be bytes")
        self.value = value
        return 0

    def undefine(self):
        self._table.pop(self._uuid, None)
        return 0
