"""Cinder connection_info -> libvirt disk config (doc/source/contributor/contract.rst §13).

One function per ``driver_volume_type`` maps the connection to a source;
:func:`get_disk_config` then applies the rules every volume shares: serial and
alias from the volume id, cache mode and io mode from ``[libvirt]``,
multiattach, read-only and discard.
"""

import os
import stat

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


def _local_source(data):
    path = data.get("device_path")
    if not path:
        raise exception.Invalid(reason="local connection_info lacks data.device_path")
    try:
        is_block = stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        is_block = False
    return {"source_type": "block" if is_block else "file", "source_path": path}


def _iscsi_source(data):
    path = data.get("device_path")
    if not path:
        # NOTE: the udev name os-brick's iSCSI connector waits for; we never
        # log in ourselves, unit tests only check the XML.
        path = (f"/dev/disk/by-path/ip-{data['target_portal']}-iscsi-"
                f"{data['target_iqn']}-lun-{data.get('target_lun', 0)}")
    return {"source_type": "block", "source_path": path}


def _rbd_source(data):
    hosts = list(zip(data.get("hosts") or [], data.get("ports") or [], strict=False))
    source = {"source_type": "network", "source_protocol": "rbd",
              "source_name": data["name"], "source_hosts": hosts}
    if data.get("auth_enabled") and data.get("auth_username"):
        if not data.get("secret_uuid"):
            # libvirt needs the secret holding the cephx key; without it the
            # attach could only fail later with a less helpful message.
            raise exception.Invalid(reason="rbd connection_info enables auth but names "
                                           "no secret_uuid")
        source.update(auth_username=data["auth_username"],
                      auth_secret_type=data.get("secret_type") or "ceph",
                      auth_secret_uuid=data.get("secret_uuid"))
    return source


SOURCE_BUILDERS = {
    "local": _local_source,
    "iscsi": _iscsi_source,
    "rbd": _rbd_source,
}


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


def get_disk_config(conf, connection_info, mountpoint, disk_bus=None, device_type=None,
                    boot_order=None):
    """Build the :class:`config.DiskConfig` for a Cinder volume."""
    driver_type = connection_info.get("driver_volume_type")
    builder = SOURCE_BUILDERS.get(driver_type)
    if builder is None:
        raise exception.VolumeDriverNotFound(driver_type=driver_type)
    data = connection_info.get("data") or {}
    source = builder(data)
    multiattach = block_device.is_multiattach(connection_info)
    cache, io = _cache_and_io(conf, source["source_type"], multiattach)
    bus = disk_bus or block_device.DEFAULT_VOLUME_BUS
    dev = block_device.strip_dev(mountpoint)
    vol_id = block_device.volume_id(connection_info)
    disk = config.DiskConfig(
        device=device_type or "disk",
        target_dev=dev,
        target_bus=bus,
        driver_cache=cache,
        driver_io=io,
        driver_discard="unmap" if data.get("discard") else None,
        serial=vol_id,
        alias=config.volume_alias(vol_id) if vol_id else None,
        shareable=multiattach,
        readonly=data.get("access_mode") == "ro",
        scsi_unit=block_device.unit_for_device(dev) if bus == "scsi" else None,
        boot_order=boot_order,
        iotune={k: v for k, v in (data.get("qos_specs") or {}).items() if k in IOTUNE_KEYS},
        **source,
    )
    return disk
