"""The host side of swap volume: move a running server's disk onto another volume.

Steps (under the instance lock, the server in task ``swapping_volume``):

1. give Cinder this host's connector for the new volume's attachment (made
   ``reserved`` by the conductor) and connect the new volume here; an
   encrypted one is prepared as its attach would be (key read as the user,
   its own libvirt secret), see compute/encryption.py;
2. copy the disk with a libvirt block copy and pivot onto the new volume
   (the guest keeps running and keeps its device and serial);
3. complete the new attachment, let go of the old volume (disconnect it,
   delete its attachment), end Cinder's migration when Cinder started one
   (``os-migrate_volume_completion``; an attachment Cinder loses there is
   made again, see volume/migration.py) and point the BDM at the new volume,
   its attachment, connection, size and type.

Until the pivot every failure is undone: the new volume is disconnected, its
attachment deleted and Cinder's migration ended with an error, so the guest
keeps the old volume, attached and in use, and nothing is left without its
pair (BDM and Cinder attachment). A compute killed mid-copy leaves the task
state behind: :meth:`VolumeSwapper.recover` does the same undo when the
compute starts again. The task state keeps the dangling-attachment
reconciliation away meanwhile, since the second attachment of the server is
expected then.
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import connections, encryption
from volumesvc.compute import instances as compute_instances
from volumesvc.states import task_states
from volumesvc.virt import block_device as virt_bd
from volumesvc.volume import migration

LOG = logging.getLogger(__name__)

EVENT = "compute_swap_volume"
GiB = 1024 ** 3


class VolumeSwapper:
    """One per compute process; holds no state about a swap (the task state does)."""

    def __init__(self, conf, driver, conductor, cinder, reporter, *, keys):
        self.host = conf.host
        self.keys = keys
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.reporter = reporter

    def _disconnect(self, context, instance_uuid, info):
        return connections.disconnect(
            context, cinder=self.cinder, conductor=self.conductor, driver=self.driver,
            host=self.host, instance_uuid=instance_uuid, connection_info=info)

    def _bdm(self, context, instance_uuid, volume_id):
        for bdm in bdm_mod.listed(self.conductor, context, instance_uuid):
            if bdm.volume_id == volume_id:
                return bdm
        raise exception.VolumeNotAttachedToInstance(instance_uuid=instance_uuid,
                                                    volume_id=volume_id)

    def swap(self, context, instance, *, old_volume_id, new_volume_id, new_attachment_id):
        """Run the swap, then take the server out of its task; raises on failure.

        The task state is cleared on success and after a rollback, never on
        the way out of a dying process: what a killed compute leaves is found
        by :meth:`recover` on its next start.
        """
        uuid = instance["uuid"]
        bdms = None
        ids = {"volume_id": old_volume_id, "new_volume_id": new_volume_id}
        try:
            with self.reporter.event(context, uuid, EVENT):
                bdm = self._bdm(context, uuid, old_volume_id)
                bdms = [bdm]
                self.reporter.notify(context, instance, "volume_swap", "start", bdms=bdms, **ids)
                bdm = self._swap(context, instance, bdm, old_volume_id, new_volume_id,
                                 new_attachment_id)
        except Exception as exc:
            self._end_task(context, uuid)
            self.reporter.notify(context, instance, "volume_swap", "error", bdms=bdms,
                                 exc=exc, **ids)
            raise
        self._end_task(context, uuid)
        self.reporter.notify(context, instance, "volume_swap", "end", bdms=[bdm], **ids)

    def _end_task(self, context, uuid):
        compute_instances.update_instance(self.conductor, context, uuid, {"task_state": None},
                                          expected=task_states.SWAPPING_VOLUME)

    def _swap(self, context, instance, bdm, old_volume_id, new_volume_id, new_attachment_id):
        uuid = instance["uuid"]
        old_info = bdm.connection_info or {}
        old_volume = self.cinder.get(context, old_volume_id)
        new_volume = self.cinder.get(context, new_volume_id)
        migrating = bool(old_volume.get("migration_status"))
        new_info, connected = None, False
        try:
            connector = self.driver.get_volume_connector()
            new_info = self.cinder.attachment_update(context, new_attachment_id, connector,
                                                     mountpoint=bdm.device_name)
            # The guest keeps its disk's serial (and the alias made from it).
            new_info["serial"] = virt_bd.volume_id(old_info) or old_volume_id
            virt_bd.keep_read_only(new_info, bdm)
            # The new volume's key, as its attach would read it (refusals first).
            plan = encryption.prepare_swap(context, cinder=self.cinder, keys=self.keys,
                                           driver=self.driver, old=(old_volume_id, old_info),
                                           new=(new_volume_id, new_info))
            self.driver.connect_volume(new_info)
            connected = True
            encryption.open_volume(self.driver, new_info, plan)
            # The new volume's full size, whatever the old one's: the driver
            # grows the guest's disk to it (less a LUKS header QEMU decrypts)
            # before the copy when it is smaller.
            self.driver.swap_volume(old_info, new_info,
                                    compute_instances.driver_instance(instance),
                                    bdm.device_name,
                                    resize_to_bytes=int(new_volume["size"]) * GiB)
        except Exception:
            LOG.exception("Swapping volume %s for %s on %s failed; the server keeps %s",
                          old_volume_id, new_volume_id, uuid, old_volume_id)
            self._undo(context, uuid, new_info if connected else None, new_attachment_id,
                       old_volume_id, new_volume_id)
            raise
        # The guest runs on the new volume from here: go forward only.
        self.cinder.attachment_complete(context, new_attachment_id)
        self._release_old(context, uuid, bdm, old_info)
        save_volume_id = new_volume_id
        if migrating:
            # Cinder moves the new volume's data and attachment under the old
            # id (and may lose the attachment doing so: migration.complete).
            save_volume_id, new_attachment_id = migration.complete(
                self.cinder, context.elevated(), old_volume_id=old_volume_id,
                new_volume_id=new_volume_id, attachment_id=new_attachment_id,
                instance_uuid=uuid, connector=connector, mountpoint=bdm.device_name,
                mode=virt_bd.attach_mode(bdm))
            new_info["attachment_id"] = new_attachment_id
        values = {"volume_id": save_volume_id, "attachment_id": new_attachment_id,
                  "connection_info": bdm_mod.encode_connection_info(new_info),
                  "volume_size": int(new_volume["size"]),
                  "volume_type": new_volume.get("volume_type")}
        return bdm_mod.BDM.from_wire(
            self.conductor.bdm_update(context, bdm_uuid=bdm.uuid, values=values))

    def _release_old(self, context, uuid, bdm, old_info):
        """Disconnect the old volume and delete its attachment; a failure is only logged.

        The copy is done: the old volume is not used any more, and Cinder's
        migration must still be completed after this.
        """
        try:
            if old_info:
                self._disconnect(context, uuid, old_info)
        except Exception as exc:  # noqa: BLE001
            LOG.warning("Could not disconnect the old volume %s of %s: %s",
                        bdm.volume_id, uuid, exc)
        if bdm.attachment_id:
            try:
                self.cinder.attachment_delete(context.elevated(), bdm.attachment_id)
            except exception.VolumeAttachmentNotFound:
                pass

    def _undo(self, context, uuid, new_info, new_attachment_id, old_volume_id,
              new_volume_id):
        if new_info:
            try:
                self._disconnect(context, uuid, new_info)
            except Exception as exc:  # noqa: BLE001 - release Cinder anyway
                LOG.warning("Could not disconnect volume %s: %s", new_volume_id, exc)
        try:
            self.cinder.attachment_delete(context.elevated(), new_attachment_id)
        except Exception as exc:  # noqa: BLE001
            LOG.warning("Could not delete attachment %s: %s", new_attachment_id, exc)
        migration.fail(self.cinder, context.elevated(), old_volume_id, new_volume_id)

    # -- a compute that died mid-swap -----------------------------------------

    def recover(self, context, instance):
        """Undo a swap this compute was running when it died (task state left behind).

        Called by the reconciliation when the compute starts (instance lock
        held), before it reconciles the server's volumes: it then finds the
        server out of its task again.

        The copy job QEMU may still run is cancelled (the disk stays on the
        old volume: nothing pivots without us), every Cinder attachment of
        the server whose volume no BDM names is the swap's new one and is
        disconnected and deleted, and the migration Cinder started (the new
        volume's ``migration_status`` is ``target:<old id>``) ends with an
        error.
        """
        uuid = instance["uuid"]
        LOG.warning("Instance %s was swapping a volume when this compute stopped; "
                    "rolling the swap back", uuid)
        self.driver.cancel_volume_swaps(compute_instances.driver_instance(instance))
        known = {b.volume_id for b in bdm_mod.listed(self.conductor, context, uuid)}
        admin = context.elevated()
        # NOTE: all_tenants: the volumes are the tenant's, not this service's project.
        for attachment in self.cinder.attachment_get_all(admin, instance_id=uuid,
                                                         all_tenants=True):
            if attachment.get("volume_id") in known:
                continue
            self._recover_attachment(admin, uuid, attachment)
        self._end_task(context, uuid)

    def _recover_attachment(self, context, uuid, attachment):
        new_volume_id = attachment["volume_id"]
        try:
            info = self.cinder.attachment_get(context, attachment["id"]).get(
                "connection_info")
            if info:
                self._disconnect(context, uuid, info)
        except Exception as exc:  # noqa: BLE001 - release Cinder anyway
            LOG.warning("Could not disconnect volume %s: %s", new_volume_id, exc)
        self.cinder.attachment_delete(context, attachment["id"])
        try:
            status = self.cinder.get(context, new_volume_id).get("migration_status") or ""
        except exception.VolumeNotFound:
            return
        if status.startswith("target:"):
            migration.fail(self.cinder, context, status.split(":", 1)[1], new_volume_id)
