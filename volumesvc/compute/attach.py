"""The host side of volume attach and detach.

``reserve`` runs inside an RPC call from the conductor and must stay short;
``attach`` and ``detach`` run from casts and report through the DB (BDM,
instance action events) and notifications. Each undoes its own work on
failure so a BDM and a Cinder attachment always exist together or not at all.
"""

import time

from oslo_log import log as logging
from oslo_serialization import jsonutils

from volumesvc import exception
from volumesvc.compute import volumes as boot_volumes
from volumesvc.virt import block_device as virt_bd

LOG = logging.getLogger(__name__)


class VolumeAttacher:
    def __init__(self, conf, driver, conductor, cinder):
        self.conf = conf
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder

    def reserve(self, context, instance, *, volume_id, device, disk_bus, device_type, tag,
                multiattach, delete_on_termination):
        """Pick the next free device name and create the BDM (caller holds the lock)."""
        delay = self.conf.compute.benchmark_reserve_delay
        if delay:
            time.sleep(delay)  # benchmark only: a slow compute host
        caps = self.driver.capabilities
        if tag and not caps.get("supports_tagged_attach_volume"):
            raise exception.TaggedAttachmentNotSupported()
        if multiattach and not caps.get("supports_multiattach"):
            raise exception.MultiattachNotSupportedByVirtDriver(volume_id=volume_id)
        bdms = self.conductor.bdm_list(context, instance_uuid=instance["uuid"])
        if any(b.get("volume_id") == volume_id for b in bdms):
            raise exception.VolumeAlreadyAttached(volume_id=volume_id,
                                                  instance_uuids=instance["uuid"])
        maximum = self.conf.compute.max_disk_devices_to_attach
        if maximum >= 0 and len(boot_volumes.volume_bdms(bdms)) >= maximum:
            raise exception.TooManyDiskDevices(maximum=maximum)
        bus = disk_bus or virt_bd.DEFAULT_VOLUME_BUS
        # NOTE: the requested device is only a hint (as with Nova's libvirt
        # driver): the name is the next free one on the bus.
        name = virt_bd.get_next_device_name(
            [b.get("device_name") for b in bdms if b.get("device_name")], bus)
        return self.conductor.bdm_create(context, values={
            "instance_uuid": instance["uuid"], "source_type": "volume",
            "destination_type": "volume", "volume_id": volume_id, "device_name": name,
            "disk_bus": bus, "device_type": device_type or "disk", "tag": tag,
            "delete_on_termination": bool(delete_on_termination), "boot_index": None})

    def attach(self, context, driver_instance, bdm, multiattach=None, resume=False):
        """Connect, attach LIVE|CONFIG, complete; undo everything on failure.

        ``multiattach`` is the volume's flag as the API read it; None means
        ask Cinder. ``resume``: finish an attach a dead compute left with the
        Cinder attachment ``attaching`` (updating it again is allowed by
        Cinder); a disk the domain already has is not attached twice.
        """
        attached = False
        info = None
        try:
            connector = self.driver.get_volume_connector()
            info = self.cinder.attachment_update(context, bdm["attachment_id"], connector,
                                                 mountpoint=bdm["device_name"])
            info["serial"] = bdm["volume_id"]
            delay = self.conf.compute.debug_attach_delay
            if delay:
                time.sleep(delay)  # tests only: a compute dying mid-attach
            if multiattach is None:
                multiattach = bool(self.cinder.get(context, bdm["volume_id"]).get("multiattach"))
            if multiattach:
                info["multiattach"] = True
            self.driver.check_multiattach(info)
            if not (resume and self.driver.has_volume_disk(driver_instance, bdm["volume_id"])):
                self.driver.attach_volume(info, driver_instance, bdm["device_name"],
                                          disk_bus=bdm.get("disk_bus"),
                                          device_type=bdm.get("device_type"))
            attached = True
            self.conductor.bdm_update(context, bdm_uuid=bdm["uuid"],
                                      values={"connection_info": jsonutils.dumps(info)})
            self.cinder.attachment_complete(context, bdm["attachment_id"])
        except Exception:
            self._undo_attach(context, driver_instance, bdm, info if attached else None)
            raise

    def resume(self, context, driver_instance, bdm):
        """Finish an interrupted attach (see ``attach``); roll it back when that fails."""
        self.attach(context, driver_instance, bdm, resume=True)

    def _undo_attach(self, context, driver_instance, bdm, info):
        if info is not None:
            try:
                self.driver.detach_volume(info, driver_instance, bdm["device_name"])
            except Exception as exc:  # noqa: BLE001 - release Cinder and the BDM anyway
                LOG.warning("Could not detach %s after a failed attach: %s",
                            bdm["volume_id"], exc)
        try:
            self.cinder.attachment_delete(context.elevated(), bdm["attachment_id"])
        except Exception as exc:  # noqa: BLE001
            LOG.warning("Could not delete attachment %s: %s", bdm["attachment_id"], exc)
        try:
            self.conductor.bdm_destroy(context, bdm_uuid=bdm["uuid"])
        except exception.NotFound:
            pass

    def detach(self, context, driver_instance, bdm, attachment_id):
        """Detach from the domain, delete the attachment, forget the BDM.

        A failure before Cinder was told leaves the volume attached
        (``roll_detaching`` undoes the API's ``os-begin_detaching``).
        """
        info = bdm.get("connection_info")
        info = jsonutils.loads(info) if isinstance(info, str) else info
        try:
            if info:
                self.driver.detach_volume(info, driver_instance, bdm.get("device_name"))
        except Exception:
            try:
                self.cinder.roll_detaching(context, bdm["volume_id"])
            except Exception as exc:  # noqa: BLE001
                LOG.warning("roll_detaching %s failed: %s", bdm["volume_id"], exc)
            raise
        if attachment_id:
            self.cinder.attachment_delete(context.elevated(), attachment_id)
        self.conductor.bdm_destroy(context, bdm_uuid=bdm["uuid"])
