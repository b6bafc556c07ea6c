"""Volumes os-brick connects on this host, and those it makes a block device of.

os-brick logs in (or scans, or connects the fabric, or mounts) and answers
with the path of the volume on this host, which becomes ``data.device_path``
of the connection info, so the BDM keeps it and the domain's disk names it.
:class:`LibvirtBlockVolumeDriver` is the ``<disk type='block'>`` of iSCSI,
Fibre Channel, NVMe-oF and the other block protocols.
"""

from volumesvc import exception
from volumesvc.virt.libvirt.volume import base, brick


class LibvirtBrickVolumeDriver(base.LibvirtBaseVolumeDriver):
    """A volume behind one of os-brick's connectors (built once, as in Nova)."""

    def __init__(self, conf, protocol):
        super().__init__(conf)
        self.protocol = protocol
        self._connector = None

    def connector_kwargs(self):
        """Extra arguments of os-brick's connector factory for this protocol."""
        return {}

    @property
    def connector(self):
        if self._connector is None:
            self._connector = brick.connector(self.conf, self.protocol,
                                              **self.connector_kwargs())
        return self._connector

    def connect_volume(self, connection_info):
        data = connection_info.setdefault("data", {})
        with brick.errors(f"connecting {self.protocol} volume"):
            device_info = self.connector.connect_volume(data)
        data["device_path"] = device_info["path"]

    def disconnect_volume(self, connection_info):
        with brick.errors(f"disconnecting {self.protocol} volume"):
            self.connector.disconnect_volume(connection_info.get("data") or {}, None)


class LibvirtBlockVolumeDriver(LibvirtBrickVolumeDriver):
    host_decrypts = True

    def source(self, connection_info):
        return {"source_type": "block", "source_path": base.connected_path(connection_info)}

    def extend_volume(self, connection_info, requested_size):
        """Rescan the device so the host sees the size Cinder gave it; return it."""
        with brick.errors(f"extending {self.protocol} volume"):
            new_size = self.connector.extend_volume(connection_info.get("data") or {})
        if not new_size:
            raise exception.VirtDriverError(
                reason=f"os-brick found no new size for the {self.protocol} volume")
        return new_size
