"""Volumes at boot: create what the BDMs ask for, attach it, describe it to the driver.

Each step updates the BDM dicts in place and persists the change through the
conductor before the next step, so a failure at any point leaves records
that say exactly which volume and attachment exist and can be released.
"""

from oslo_log import log as logging
from oslo_serialization import jsonutils

from volumesvc.virt import block_device as virt_bd
from volumesvc.volume import cleanup

LOG = logging.getLogger(__name__)

NEW_VOLUME_SOURCES = ("blank", "image", "snapshot")


def volume_bdms(bdms):
    """BDMs backed by a Cinder volume, boot disk first then in creation order."""
    chosen = [b for b in bdms if b.get("destination_type") == "volume"]
    return sorted(chosen, key=lambda b: (b.get("boot_index") is None
                                         or b.get("boot_index") < 0,
                                         b.get("boot_index") or 0, b.get("id") or 0))


class BootVolumes:
    """The volume steps of one build, with their undo."""

    def __init__(self, conf, cinder, conductor, driver, context, instance):
        self.conf = conf
        self.cinder = cinder
        self.conductor = conductor
        self.driver = driver
        self.context = context
        self.instance = instance
        self.created = []  # volume ids this build created

    def _save(self, bdm, **values):
        bdm.update(values)
        self.conductor.bdm_update(self.context, bdm_uuid=bdm["uuid"], values=values)

    def create_volumes(self, bdms):
        """Create the blank/image/snapshot volumes (with their volume_type) and wait."""
        pending = []
        for bdm in volume_bdms(bdms):
            if bdm.get("volume_id") or bdm.get("source_type") not in NEW_VOLUME_SOURCES:
                continue
            volume = self.cinder.create(
                self.context, bdm.get("volume_size") or 1,
                f"{self.instance['uuid']}-{bdm['source_type']}-vol", "",
                volume_type=bdm.get("volume_type") or None,
                snapshot_id=bdm.get("snapshot_id") if bdm["source_type"] == "snapshot"
                else None,
                image_id=bdm.get("image_id") if bdm["source_type"] == "image" else None,
                availability_zone=self.instance.get("availability_zone") or None)
            self.created.append(volume["id"])
            self._save(bdm, volume_id=volume["id"])
            pending.append(volume["id"])
        for volume_id in pending:
            cleanup.wait_for_status(self.cinder, self.context, volume_id, ("available",),
                                    timeout=self.conf.compute.volume_wait_timeout)

    def connect(self, bdms):
        """Attachment per volume BDM, connection_info from Cinder; block_device_info out."""
        connector = self.driver.get_volume_connector()
        used = []
        mappings = []
        root_device = None
        for bdm in volume_bdms(bdms):
            bus = bdm.get("disk_bus") or virt_bd.DEFAULT_VOLUME_BUS
            device = virt_bd.get_next_device_name(used, bus)
            used.append(device)
            if not bdm.get("attachment_id"):
                attachment = self.cinder.attachment_create(
                    self.context, bdm["volume_id"], self.instance["uuid"])
                self._save(bdm, attachment_id=attachment["id"])
            volume = self.cinder.get(self.context, bdm["volume_id"])
            info = self.cinder.attachment_update(
                self.context, bdm["attachment_id"], connector, mountpoint=device)
            info["serial"] = bdm["volume_id"]
            if volume.get("multiattach"):
                info["multiattach"] = True
            self.driver.check_multiattach(info)
            self._save(bdm, device_name=device, disk_bus=bus,
                       device_type=bdm.get("device_type") or "disk",
                       connection_info=jsonutils.dumps(info))
            if bdm.get("boot_index") == 0:
                root_device = device
            mappings.append({"connection_info": info, "mount_device": device,
                             "boot_index": bdm.get("boot_index"), "disk_bus": bus,
                             "device_type": bdm.get("device_type") or "disk"})
        return {"root_device_name": root_device, "block_device_mapping": mappings}

    def complete(self, bdms):
        for bdm in volume_bdms(bdms):
            self.cinder.attachment_complete(self.context, bdm["attachment_id"])

    def rollback(self, bdms):
        """Release every attachment; delete created volumes that are delete_on_termination.

        Volumes the user brought (``source_type: volume``) or asked to keep
        stay, ``available`` again; the BDMs forget the attachment so the
        ERROR server's records match Cinder.
        """
        for bdm in volume_bdms(bdms):
            try:
                if bdm.get("attachment_id"):
                    self.cinder.attachment_delete(self.context, bdm["attachment_id"])
                    self._save(bdm, attachment_id=None, connection_info=None)
                if bdm.get("volume_id") in self.created and bdm.get("delete_on_termination"):
                    cleanup.wait_for_status(
                        self.cinder, self.context, bdm["volume_id"],
                        ("available", "error"), timeout=self.conf.compute.volume_wait_timeout)
                    self.cinder.delete(self.context, bdm["volume_id"])
                    self._save(bdm, volume_id=None)
            except Exception as exc:  # noqa: BLE001 - release the others too
                LOG.warning("Rollback of volume %s for instance %s failed: %s",
                            bdm.get("volume_id"), self.instance["uuid"], exc)


def block_device_info(bdms):
    """Rebuild block_device_info from saved BDMs (reboot, terminate)."""
    mappings = []
    root = None
    for bdm in volume_bdms(bdms):
        info = bdm.get("connection_info")
        if not info:
            continue
        if isinstance(info, str):
            info = jsonutils.loads(info)
        if bdm.get("boot_index") == 0:
            root = bdm.get("device_name")
        mappings.append({"connection_info": info, "mount_device": bdm.get("device_name"),
                         "boot_index": bdm.get("boot_index"),
                         "disk_bus": bdm.get("disk_bus") or virt_bd.DEFAULT_VOLUME_BUS,
                         "device_type": bdm.get("device_type") or "disk"})
    return {"root_device_name": root, "block_device_mapping": mappings}
