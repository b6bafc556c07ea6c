"""Volumes at boot: create what the BDMs ask for, attach it, describe it to the driver.

Each step puts the BDM as saved into the build's list (``compute/bdm.py``'s
views never change) and persists the change through the conductor before
the next step, so a failure at any point leaves records that say exactly
which volume and attachment exist and can be released.
"""

import os

from oslo_log import log as logging
from oslo_serialization import jsonutils

from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import encryption
from volumesvc.virt import block_device as virt_bd
from volumesvc.virt.instance_path import instance_dir, remove_instance_dir
from volumesvc.volume import cleanup

LOG = logging.getLogger(__name__)

NEW_VOLUME_SOURCES = ("blank", "image", "snapshot")


def _boot_order(bdm):
    index = bdm.boot_index
    return (index is None or index < 0, index or 0, bdm.id or 0)


def volume_bdms(bdms):
    """BDMs backed by a Cinder volume, boot disk first then in creation order."""
    return sorted((b for b in bdms if b.is_volume), key=_boot_order)


def is_local_root(bdm):
    """The image-backed root disk (``image`` → ``local``, boot index 0)."""
    return (bdm.source_type == "image" and bdm.destination_type == "local"
            and bdm.boot_index == 0)


def disk_bdms(bdms):
    """Every BDM that becomes a guest disk: the local root (if any), then volumes."""
    return sorted((b for b in bdms if is_local_root(b) or b.is_volume), key=_boot_order)


class BootVolumes:
    """The volume steps of one build, with their undo."""

    def __init__(self, conf, cinder, conductor, driver, context, instance, glance=None,
                 keys=None):
        self.conf = conf
        self.keys = keys  # the key manager adapter, for encrypted volumes
        self.cinder = cinder
        self.glance = glance
        self.conductor = conductor
        self.driver = driver
        self.context = context
        self.instance = instance
        self.created = []  # volume ids this build created
        # Volumes this build waited for, as Cinder last showed them: connect()
        # needs nothing from a new volume that the wait has not already read.
        self.ready = {}

    def _save(self, bdms, bdm, **values):
        """Save ``values`` of ``bdm``; the BDM as saved takes its place in ``bdms``.

        In the list first: should the save fail, the rollback still sees
        what this build made (a created volume's id).
        """
        saved = bdm_mod.replace_in(bdms, bdm, bdm.replace(**values))
        self.conductor.bdm_update(self.context, bdm_uuid=bdm.uuid, values=values)
        return saved

    def _made_read_only(self, bdm, attachment):
        """``read_only`` for the BDM when Cinder made its attachment ``ro`` on its own.

        A volume with Cinder's read-only flag: os-volume_attachments (2.108)
        shows it read-only.
        """
        if attachment.get("attach_mode") != "ro" or bdm.read_only:
            return {}
        return {"read_only": True}

    def create_volumes(self, bdms):
        """Create the blank/image/snapshot volumes (with their volume_type) and wait.

        Every create goes out before the first wait, so Cinder builds a
        server's volumes side by side; the first wait starts from create's own
        answer (no GET of a volume Cinder has just accepted).
        """
        pending = []
        for bdm in volume_bdms(bdms):
            if bdm.volume_id or bdm.source_type not in NEW_VOLUME_SOURCES:
                continue
            volume = self.cinder.create(
                self.context, bdm.volume_size or 1,
                f"{self.instance['uuid']}-{bdm.source_type}-vol", "",
                volume_type=bdm.volume_type or None,
                snapshot_id=bdm.snapshot_id if bdm.source_type == "snapshot" else None,
                image_id=bdm.image_id if bdm.source_type == "image" else None,
                availability_zone=self.instance.get("availability_zone") or None)
            self.created.append(volume["id"])
            self._save(bdms, bdm, volume_id=volume["id"])
            pending.append(volume)
        for i, volume in enumerate(pending):
            # Only the first wait starts from create's answer: the others were
            # created at least as long ago as it took the first to be ready.
            self.ready[volume["id"]] = cleanup.wait_for_status(
                self.cinder, self.context, volume["id"], ("available",),
                timeout=self.conf.compute.volume_wait_timeout,
                known=volume if i == 0 else None)

    def connect(self, bdms):
        """Attachment per volume BDM, connection_info from Cinder; block_device_info out."""
        connector = self.driver.get_volume_connector()
        used: list[str] = []
        mappings = []
        root_device = None
        for bdm in disk_bdms(bdms):
            bus = bdm.disk_bus or virt_bd.DEFAULT_VOLUME_BUS
            device = virt_bd.get_next_device_name(used, bus)
            used.append(device)
            if is_local_root(bdm):
                info = self._local_root(bdm)
                bdm = self._save(bdms, bdm, device_name=device, disk_bus=bus,
                                 device_type="disk",
                                 connection_info=bdm_mod.encode_connection_info(info))
                root_device = device
                mappings.append({"connection_info": info, "mount_device": device,
                                 "boot_index": 0, "disk_bus": bus, "device_type": "disk",
                                 "tag": bdm.tag})
                continue
            if not bdm.attachment_id:
                attachment = self.cinder.attachment_create(
                    self.context, bdm.volume_id, self.instance["uuid"],
                    mode=virt_bd.attach_mode(bdm))
                bdm = self._save(bdms, bdm, attachment_id=attachment["id"],
                                 **self._made_read_only(bdm, attachment))
            volume = (self.ready.get(bdm.volume_id)
                      or self.cinder.get(self.context, bdm.volume_id))
            info = self.cinder.attachment_update(
                self.context, bdm.attachment_id, connector, mountpoint=device)
            info["serial"] = bdm.volume_id
            virt_bd.keep_read_only(info, bdm)
            if volume.get("multiattach"):
                info["multiattach"] = True
            self.driver.check_multiattach(info)
            plan = encryption.prepare(self.context, cinder=self.cinder, keys=self.keys,
                                      driver=self.driver, connection_info=info)
            self.driver.connect_volume(info)
            encryption.open_volume(self.driver, info, plan)
            bdm = self._save(bdms, bdm, device_name=device, disk_bus=bus,
                             device_type=bdm.device_type or "disk",
                             connection_info=bdm_mod.encode_connection_info(info))
            if bdm.boot_index == 0:
                root_device = device
            mappings.append({"connection_info": info, "mount_device": device,
                             "boot_index": bdm.boot_index, "disk_bus": bus,
                             "device_type": bdm.device_type or "disk",
                             "tag": bdm.tag})
        return {"root_device_name": root_device, "block_device_mapping": mappings}

    def _local_root(self, bdm):
        """Download the image into the instance directory as its raw root disk.

        The file is grown (sparse) to the flavor's root disk size, like a
        local root disk of Nova's libvirt driver with raw images. A disk
        already there (a resize on the server's own host) is kept, and only
        grown to the new flavor's size.
        """
        directory = instance_dir(self.conf, self.instance["uuid"])
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "disk")
        if not os.path.exists(path):
            # NOTE: a disk that exists is the server's own (a resize on its
            # host defines the domain again): only its size may change.
            self.glance.download(self.context, bdm.image_id, path)
        root_gb = (self.instance.get("flavor") or {}).get("root_gb") or 0
        if os.path.getsize(path) < root_gb << 30:
            os.truncate(path, root_gb << 30)
        return {"driver_volume_type": "local", "data": {"device_path": path},
                "serial": bdm.uuid}

    def complete(self, bdms):
        for bdm in volume_bdms(bdms):
            self.cinder.attachment_complete(self.context, bdm.attachment_id)

    def rollback(self, bdms):
        """Release every attachment; delete created volumes that are delete_on_termination.

        Volumes the user brought (``source_type: volume``) or asked to keep
        stay, ``available`` again; the BDMs forget the attachment so the
        ERROR server's records match Cinder.
        """
        for bdm in volume_bdms(bdms):
            try:
                if bdm.attachment_id:
                    self.cinder.attachment_delete(self.context, bdm.attachment_id)
                    bdm = self._save(bdms, bdm, attachment_id=None, connection_info=None)
                if bdm.volume_id in self.created and bdm.delete_on_termination:
                    cleanup.wait_for_status(
                        self.cinder, self.context, bdm.volume_id,
                        ("available", "error"), timeout=self.conf.compute.volume_wait_timeout)
                    self.cinder.delete(self.context, bdm.volume_id)
                    bdm = self._save(bdms, bdm, volume_id=None)
            except Exception as exc:  # noqa: BLE001 - release the others too
                LOG.warning("Rollback of volume %s for instance %s failed: %s",
                            bdm.volume_id, self.instance["uuid"], exc)
        remove_instance_dir(self.conf, self.instance["uuid"])


def reconnect(driver, conductor, context, bdms, keys):
    """Connect each connected volume again before its domain is defined anew; the BDMs after.

    A hard reboot, a start and an unshelve on the same host rebuild the
    domain from the saved connection info. After the host itself restarted,
    what that info points at may be gone (an iSCSI session, an NFS mount) or
    back under another name (a SCSI device), so, as Nova does, every volume
    is connected again first (os-brick's connectors do nothing on a host that
    kept the connection) and the info is saved when connecting changed it,
    so the domain and a later disconnect use the new device. An encrypted
    volume is opened again with its key (``keys``, the key manager adapter).
    """
    out = []
    for bdm in bdms:
        if not bdm.is_volume or not bdm.has_connection:
            out.append(bdm)
            continue
        info = bdm.connection_info  # the view's own copy: connecting may change it
        before = jsonutils.dumps(info, sort_keys=True)
        driver.connect_volume(info)
        encryption.reopen(context, keys=keys, driver=driver, connection_info=info)
        if jsonutils.dumps(info, sort_keys=True) != before:
            saved = bdm_mod.encode_connection_info(info)
            conductor.bdm_update(context, bdm_uuid=bdm.uuid,
                                 values={"connection_info": saved})
            bdm = bdm.replace(connection_info=saved)
        out.append(bdm)
    return out


def block_device_info(bdms):
    """Rebuild block_device_info from saved BDMs (reboot, terminate)."""
    mappings = []
    root = None
    for bdm in disk_bdms(bdms):
        if not bdm.has_connection:
            continue
        if bdm.boot_index == 0:
            root = bdm.device_name
        mappings.append({"connection_info": bdm.connection_info,
                         "mount_device": bdm.device_name,
                         "boot_index": bdm.boot_index,
                         "disk_bus": bdm.disk_bus or virt_bd.DEFAULT_VOLUME_BUS,
                         "device_type": bdm.device_type or "disk",
                         "tag": bdm.tag})
    return {"root_device_name": root, "block_device_mapping": mappings}
