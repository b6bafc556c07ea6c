"""libvirt volume drivers, one per source kind, as Nova's ``LibvirtVolumeDriver`` family.

``driver_volume_type`` (Cinder's connection info) picks the driver:

* block (:mod:`.block`): os-brick connects a host block device (iSCSI,
  iSER, Fibre Channel, NVMe-oF, ScaleIO, StorPool, LightOS);
* file (:mod:`.fs`): os-brick mounts a share, the disk is a file on it (NFS);
* network (:mod:`.net`): QEMU opens the RBD image itself;
* ``local`` (:mod:`.local`): a path on this host (the all-in-one's test
  driver).

An unknown type is :class:`~volumesvc.exception.VolumeDriverNotFound`.
What each protocol needs and what has really been run where:
doc/source/admin/storage-protocols.rst.
"""

import functools
from collections.abc import Callable

from volumesvc import exception
from volumesvc.virt.libvirt.volume import base, block, brick, fs, local, net

parse_cache_modes = base.parse_cache_modes

#: driver_volume_type -> factory(conf) of its driver.
DRIVERS: dict[str, Callable[..., base.LibvirtBaseVolumeDriver]] = {
    "local": local.LibvirtLocalVolumeDriver,
    "rbd": net.LibvirtNetVolumeDriver,
    **{kind: functools.partial(block.LibvirtBlockVolumeDriver, protocol=protocol)
       for kind, protocol in brick.BLOCK_PROTOCOLS.items()},
    **{kind: functools.partial(fs.LibvirtRemoteFsVolumeDriver, protocol=protocol)
       for kind, protocol in brick.REMOTEFS_PROTOCOLS.items()},
}


class VolumeDrivers:
    """One driver object per ``driver_volume_type``, built on first use.

    The block and file drivers keep their os-brick connector, which is
    built once, as Nova's drivers do.
    """

    def __init__(self, conf):
        self.conf = conf
        self._drivers: dict[str, base.LibvirtBaseVolumeDriver] = {}

    def get(self, connection_info):
        kind = connection_info.get("driver_volume_type")
        driver = self._drivers.get(kind)
        if driver is None:
            factory = DRIVERS.get(kind)
            if factory is None:
                raise exception.VolumeDriverNotFound(driver_type=kind)
            driver = self._drivers[kind] = factory(self.conf)
        return driver

    def get_config(self, connection_info, mountpoint, **kwargs):
        return self.get(connection_info).get_config(connection_info, mountpoint, **kwargs)
