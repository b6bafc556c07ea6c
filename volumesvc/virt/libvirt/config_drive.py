"""The config drive of a libvirt domain: written beside the domain, attached as its CD-ROM.

Made every time the driver defines the domain (spawn, start, hard reboot,
unshelve, rebuild), from the disks that definition holds: the ``devices``
a guest reads are those it boots with, tags of volumes attached since the
last definition included, and a rebuild's new ``user_data`` is what the
rebuilt guest finds. A stop or a soft reboot keeps the drive; the compute
removes it with the server's directory.
"""

import os

from volumesvc.virt import block_device, configdrive, instance_path
from volumesvc.virt.libvirt import config

FILE_NAME = "disk.config"  # Nova's name for it in the instance directory


def path(conf, instance_uuid: str) -> str:
    return os.path.join(instance_path.instance_dir(conf, instance_uuid), FILE_NAME)


def _address(disk: config.DiskConfig) -> str | None:
    """The drive address the guest sees: controller:bus:target:unit on virtio-scsi."""
    if disk.target_bus == "scsi" and disk.scsi_unit is not None:
        return f"0:0:0:{disk.scsi_unit}"
    return None


def devices(disks: list, tags: dict) -> list:
    """``devices`` of meta_data.json: each disk of ``disks`` whose device has a tag.

    ``tags`` maps a target dev (``sdb``) to the tag its BDM was given at
    boot (2.32) or attach (2.49); untagged disks are not listed, as Nova.
    """
    return [configdrive.disk_device(bus=disk.target_bus, serial=disk.serial,
                                    address=_address(disk), tag=tags[disk.target_dev])
            for disk in disks if tags.get(disk.target_dev)]


def tags_of(block_device_info) -> dict:
    """target dev → tag of every tagged mapping of ``block_device_info``."""
    return {block_device.strip_dev(bdm["mount_device"]): bdm["tag"]
            for bdm in block_device.get_bdms(block_device_info)
            if bdm.get("tag") and bdm.get("mount_device")}


def content(conf, instance: dict, domain: config.DomainConfig,
            block_device_info) -> dict[str, bytes]:
    """The drive's files for ``instance`` defined as ``domain``.

    The zone is the one asked for at boot, else this compute's own; the
    hostname gets ``[api] dhcp_domain``.
    """
    described = dict(instance, availability_zone=instance.get("availability_zone")
                     or conf.default_availability_zone,
                     hostname=configdrive.qualified(instance.get("hostname"),
                                                    conf.api.dhcp_domain))
    return configdrive.files(described, devices(domain.disks,
                                                tags_of(block_device_info)))


def add(domain: config.DomainConfig, iso_path: str) -> None:
    """Attach the ISO at ``iso_path`` to ``domain`` as a read-only CD-ROM."""
    domain.disks.append(config.config_drive_disk(iso_path, domain.machine))
