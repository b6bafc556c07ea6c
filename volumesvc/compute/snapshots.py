"""The host side of os-assisted-volume-snapshots, reported back to Cinder.

The API answered Cinder at once; Cinder's remotefs driver now polls its
snapshot. This module does the disk work through the virt driver, records
the disk's new active file in the BDM (so a hard reboot opens the right
file), and sets the snapshot to ``creating``/90% (``deleting``/90%) on
success or ``error`` (``error_deleting``) on failure, which is what the
remotefs driver waits for.
"""

from oslo_log import log as logging

from volumesvc.compute import bdm as bdm_mod

LOG = logging.getLogger(__name__)

PROGRESS_DONE = "90%"  # what Cinder's remotefs driver waits for


class AssistedSnapshots:
    def __init__(self, driver, conductor, cinder):
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder

    def _record_active_file(self, context, instance_uuid, volume_id, path):
        for bdm in bdm_mod.listed(self.conductor, context, instance_uuid):
            if bdm.volume_id != volume_id or not bdm.has_connection:
                continue
            info = bdm.connection_info or {}
            if (info.get("data") or {}).get("device_path") == path:
                return
            info.setdefault("data", {})["device_path"] = path
            self.conductor.bdm_update(
                context, bdm_uuid=bdm.uuid,
                values={"connection_info": bdm_mod.encode_connection_info(info)})

    def _report(self, context, snapshot_id, status, progress=None):
        try:
            self.cinder.update_snapshot_status(context.elevated(), snapshot_id, status,
                                               progress=progress)
        except Exception as exc:  # noqa: BLE001 - Cinder times the snapshot out itself
            LOG.warning("Could not report snapshot %s as %s: %s", snapshot_id, status, exc)

    def create(self, context, driver_instance, volume_id, create_info):
        snapshot_id = create_info["snapshot_id"]
        try:
            path = self.driver.volume_snapshot_create(driver_instance, volume_id, create_info)
            self._record_active_file(context, driver_instance["uuid"], volume_id, path)
        except Exception as exc:  # noqa: BLE001 - a cast reports to Cinder
            LOG.warning("Assisted snapshot %s of volume %s failed: %s", snapshot_id,
                        volume_id, exc)
            self._report(context, snapshot_id, "error")
            return False
        self._report(context, snapshot_id, "creating", PROGRESS_DONE)
        return True

    def delete(self, context, driver_instance, volume_id, snapshot_id, delete_info):
        try:
            path = self.driver.volume_snapshot_delete(driver_instance, volume_id, delete_info)
            self._record_active_file(context, driver_instance["uuid"], volume_id, path)
        except Exception as exc:  # noqa: BLE001
            LOG.warning("Deleting assisted snapshot %s of volume %s failed: %s",
                        snapshot_id, volume_id, exc)
            self._report(context, snapshot_id, "error_deleting")
            return False
        self._report(context, snapshot_id, "deleting", PROGRESS_DONE)
        return True
