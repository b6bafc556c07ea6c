"""Volumes that are files on a share os-brick mounts on this host (NFS).

The disk is ``<disk type='file'>`` at the volume's path under the mount,
which os-brick returns and which becomes ``data.device_path``. os-brick's
remote-filesystem connector never unmounts: the share stays mounted for the
host's next volume on it.
"""

from volumesvc.virt.libvirt.volume import base, block


class LibvirtRemoteFsVolumeDriver(block.LibvirtBrickVolumeDriver):
    def connector_kwargs(self):
        mount_base = self.conf.libvirt.nfs_mount_point_base
        return {"conn": {"mount_point_base": mount_base},
                "nfs_mount_point_base": mount_base,
                "nfs_mount_options": self.conf.libvirt.nfs_mount_options}

    def source(self, connection_info):
        return {"source_type": "file", "source_path": base.connected_path(connection_info)}
