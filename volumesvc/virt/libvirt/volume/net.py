"""Network disks QEMU opens itself (RBD): nothing is connected on the host.

The ``<disk type='network' protocol='rbd'>`` names the pool/image and the
monitors from Cinder's connection info, and the cephx user and libvirt
secret, which ``[libvirt] rbd_user`` / ``rbd_secret_uuid`` override as in
Nova.
"""

from volumesvc import exception
from volumesvc.virt.libvirt.volume import base


def auth(conf, data):
    """The ``<auth>`` fields of an RBD disk: who QEMU is to Ceph, and its secret."""
    if not data.get("auth_enabled"):
        return {}
    username = conf.libvirt.rbd_user or data.get("auth_username")
    secret_uuid = conf.libvirt.rbd_secret_uuid or data.get("secret_uuid")
    if not username:
        return {}
    if not secret_uuid:
        # libvirt needs the secret holding the cephx key; without it the
        # attach could only fail later with a less helpful message.
        raise exception.Invalid(reason="rbd connection_info enables auth but names no "
                                       "secret_uuid (nor is [libvirt] rbd_secret_uuid set)")
    return {"auth_username": username,
            "auth_secret_type": data.get("secret_type") or "ceph",
            "auth_secret_uuid": secret_uuid}


class LibvirtNetVolumeDriver(base.LibvirtBaseVolumeDriver):
    def source(self, connection_info):
        data = connection_info.get("data") or {}
        if not data.get("name"):
            raise exception.Invalid(reason="rbd connection_info lacks data.name (pool/image)")
        hosts = list(zip(data.get("hosts") or [], data.get("ports") or [], strict=False))
        return {"source_type": "network", "source_protocol": "rbd",
                "source_name": data["name"], "source_hosts": hosts,
                **auth(self.conf, data)}
