"""What every libvirt volume driver shares: the rules of a volume's ``<disk>``.

A driver per source kind (block, file, network, and the all-in-one's
``local``) says where the disk's data is (:meth:`LibvirtBaseVolumeDriver.source`)
and what the host must do around it (connect, disconnect, extend);
:meth:`LibvirtBaseVolumeDriver.get_config` then applies what every volume
shares: serial and alias from the volume id, cache mode and io mode from
``[libvirt]``, multiattach, read-only, discard and front-end QoS
(doc/source/contributor/contract.rst §13).
"""

from volumesvc import exception
from volumesvc.virt import block_device
from volumesvc.virt.libvirt import config

CACHE_MODES = ("none", "writethrough", "writeback", "directsync", "unsafe")
SOURCE_TYPES = ("file", "block", "network")
# Front-end QoS keys Cinder may send that map 1:1 onto <iotune> children.
IOTUNE_KEYS = ("total_bytes_sec", "read_bytes_sec", "write_bytes_sec",
               "total_iops_sec", "read_iops_sec", "write_iops_sec",
               "size_iops_sec")


def parse_cache_modes(items):
    """``['file=writeback', ...]`` -> {'file': 'writeback'}; bad items are config errors."""
    modes = {}
    for item in items or ():
        source_type, sep, mode = item.partition("=")
        if not sep or source_type not in SOURCE_TYPES or mode not in CACHE_MODES:
            raise exception.ConfigInvalid(
                reason=f"[libvirt] disk_cachemodes item {item!r} is not "
                       f"<{'|'.join(SOURCE_TYPES)}>=<{'|'.join(CACHE_MODES)}>")
        modes[source_type] = mode
    return modes


def _cache_and_io(conf, source_type, multiattach):
    cache = parse_cache_modes(conf.libvirt.disk_cachemodes).get(source_type, "none")
    if multiattach:
        # NOTE: two guests writing through their own host page cache would
        # corrupt the volume; Nova forces none whatever the operator set.
        cache = "none"
    io = None
    if source_type == "block" and not conf.libvirt.use_default_aio_mode_for_volumes:
        io = "native"
    if io == "native" and cache not in ("none", "directsync"):
        # NOTE: QEMU refuses aio=native without O_DIRECT.
        io = "threads"
    return cache, io


def connected_path(connection_info):
    """``data.device_path``: where the host connection put the volume."""
    path = (connection_info.get("data") or {}).get("device_path")
    if not path:
        raise exception.Invalid(
            reason=f"{connection_info.get('driver_volume_type')} connection_info of volume "
                   f"{block_device.volume_id(connection_info)} has no data.device_path: "
                   "the volume was not connected on this host")
    return path


class LibvirtBaseVolumeDriver:
    """A volume the hypervisor opens with no host-side work (subclasses add it)."""

    #: True when the volume becomes a host block device, which os-brick's
    #: encryptor decrypts; else QEMU opens it and decrypts it natively.
    host_decrypts = False

    def __init__(self, conf):
        self.conf = conf

    def source(self, connection_info):
        """The ``DiskConfig`` source fields (``source_type`` and the rest)."""
        raise NotImplementedError()

    def get_config(self, connection_info, mountpoint, disk_bus=None, device_type=None,
                   boot_order=None):
        """The :class:`config.DiskConfig` of the volume at ``mountpoint``."""
        data = connection_info.get("data") or {}
        source = self.source(connection_info)
        multiattach = block_device.is_multiattach(connection_info)
        cache, io = _cache_and_io(self.conf, source["source_type"], multiattach)
        bus = disk_bus or block_device.DEFAULT_VOLUME_BUS
        dev = block_device.strip_dev(mountpoint)
        vol_id = block_device.volume_id(connection_info)
        return config.DiskConfig(
            device=device_type or "disk",
            target_dev=dev,
            target_bus=bus,
            driver_format=data.get("format") or "raw",
            driver_cache=cache,
            driver_io=io,
            driver_discard="unmap" if data.get("discard") else None,
            serial=vol_id,
            alias=config.volume_alias(vol_id) if vol_id else None,
            shareable=multiattach,
            readonly=block_device.is_read_only(connection_info),
            scsi_unit=block_device.unit_for_device(dev) if bus == "scsi" else None,
            boot_order=boot_order,
            iotune={k: v for k, v in (data.get("qos_specs") or {}).items()
                    if k in IOTUNE_KEYS},
            encryption_secret_uuid=(connection_info.get("encryption") or {}).get(
                "secret_uuid"),
            **source,
        )

    def connect_volume(self, connection_info):
        """Make the volume reachable on this host; may add ``data.device_path``."""

    def disconnect_volume(self, connection_info):
        """Undo :meth:`connect_volume`; the caller knows it is the last user here."""

    def extend_volume(self, connection_info, requested_size):
        """Host-side work after Cinder grew the volume; return the size in bytes.

        Nothing to do by default: the hypervisor sees the new size once the
        libvirt driver resizes the disk (``blockResize``).
        """
        return requested_size
