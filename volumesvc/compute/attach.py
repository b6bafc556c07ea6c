"""The host side of volume attach and detach.

``attach`` and ``detach`` run from casts and report through the DB (BDM,
instance action events) and notifications. The conductor has already
made the BDM (device name, Cinder attachment id) and checked the host's
capabilities; an attach reports back to it once. Each undoes its own work
on failure so a BDM and a Cinder attachment always exist together or not
at all.

The BDM's ``attach_status`` (API 2.106, ``attach_states``) moves with the
work: ``attaching`` from the conductor's insert, ``attached`` only once
Cinder has completed the attachment and the disk is in the guest, ``error``
with the reason for a failed attach (the BDM is still deleted), ``attached``
with a fault after a failed detach.
"""

from oslo_log import log as logging

from volumesvc import exception, keymgr
from volumesvc.common import outage
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import connections, encryption
from volumesvc.compute import reporter as compute_reporter
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import attach_states
from volumesvc.virt import block_device as virt_bd

LOG = logging.getLogger(__name__)


class VolumeAttacher:
    def __init__(self, conf, driver, conductor, cinder, keys=None):
        self.conf = conf
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        #: the key manager adapter (encrypted volumes), castellan's by default
        self.keys = keys or keymgr.KeyManager(conf)
        # The calls that record what is done already wait out a database
        # outage instead of undoing (or forgetting) the work.
        self.patience = outage.Patience(conf.compute.database_outage_wait)

    def _set_status(self, context, bdm, values):
        """Persist a status transition; a failure to report never breaks the work."""
        try:
            self.patience.call(f"record status {values.get('attach_status')}",
                               self.conductor.bdm_update, context, bdm_uuid=bdm.uuid,
                               values=values)
        except exception.NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - the status is a report, not the work
            LOG.warning("Could not record status %s of volume %s: %s",
                        values.get("attach_status"), bdm.volume_id, exc)

    def detach_failed(self, context, bdm, exc):
        """The detach did not happen: ``attached`` again, with the reason as the fault."""
        self._set_status(context, bdm, attach_states.fault_values(
            attach_states.ATTACHED, attach_states.fault_code(exc),
            compute_reporter.message_of(exc)))

    def _disconnect(self, context, instance_uuid, info):
        return connections.disconnect(
            context, cinder=self.cinder, conductor=self.conductor, driver=self.driver,
            host=self.conf.host, instance_uuid=instance_uuid, connection_info=info)

    def _disconnect_released(self, context, instance_uuid, volume_id, info):
        # NOTE: a live-only context: a deleted server's leftover attachment
        # must not count as a user of the connection.
        users = connections.other_users_on_host(context, self.cinder, self.conductor,
                                                self.conf.host, instance_uuid, volume_id)
        if users:
            LOG.info("Keeping the host connection of volume %s of deleted server %s: "
                     "used by %s", volume_id, instance_uuid, ", ".join(users))
            return
        self.driver.disconnect_volume(info)

    def disconnect_all(self, context, instance_uuid, bdms, *, released=False):
        """Host side of a deleted server's volumes (after its domain is gone).

        A failure is logged, not raised: the server is being deleted and its
        attachments are released regardless. ``released``: Cinder let go of
        the volumes before the domain went (a local delete while this compute
        looked down), so any of them, not only a multiattach one, may be
        attached to another server here since; such a connection is kept.
        """
        for bdm in boot_volumes.volume_bdms(bdms):
            info = bdm.connection_info
            if not info or (released and not bdm.volume_id):
                continue
            try:
                if released:
                    self._disconnect_released(context, instance_uuid, bdm.volume_id, info)
                else:
                    self._disconnect(context, instance_uuid, info)
            except Exception as exc:  # noqa: BLE001 - the delete goes on
                LOG.warning("Could not disconnect volume %s of %s: %s",
                            bdm.volume_id, instance_uuid, exc)

    def attach(self, context, driver_instance, bdm, multiattach=None, resume=False,
               event=None):
        """Connect, attach LIVE|CONFIG, complete; undo everything on failure.

        ``multiattach`` is the volume's flag as the API read it; None means
        ask Cinder. ``resume``: finish an attach a dead compute left with the
        Cinder attachment ``attaching`` (updating it again is allowed by
        Cinder); a disk the domain already has is not attached twice.
        ``event``: the caller's ``EventScope``, finished by the one report.
        """
        attached = connected = False
        info = None
        try:
            connector = self.driver.get_volume_connector()
            info = self.cinder.attachment_update(context, bdm.attachment_id, connector,
                                                 mountpoint=bdm.device_name)
            info["serial"] = bdm.volume_id
            virt_bd.keep_read_only(info, bdm)
            if multiattach is None:
                multiattach = bool(self.cinder.get(context, bdm.volume_id).get("multiattach"))
            if multiattach:
                info["multiattach"] = True
            plan = encryption.prepare(context, cinder=self.cinder, keys=self.keys,
                                      driver=self.driver, connection_info=info)
            self.driver.connect_volume(info)
            connected = True
            encryption.open_volume(self.driver, info, plan)
            if not (resume and self.driver.has_volume_disk(driver_instance, bdm.volume_id)):
                self.driver.attach_volume(info, driver_instance, bdm.device_name,
                                          disk_bus=bdm.disk_bus,
                                          device_type=bdm.device_type)
            attached = True
            self.cinder.attachment_complete(context, bdm.attachment_id)
            self._report_attached(context, bdm, info, event)
        except Exception as exc:
            # Whatever failed, the next attach asks the host for its connector
            # again rather than reuse one that may be why.
            self.driver.forget_volume_connector()
            self._undo_attach(context, driver_instance, bdm, info, attached=attached,
                              connected=connected, failure=exc)
            raise

    def _report_attached(self, context, bdm, info, event):
        """One conductor call: the connection, ``attached`` and the event's Success.

        Cinder says in-use and the domain has the disk: only now
        ``attached``, unless a detach was accepted meanwhile (it stays
        ``detaching``; the connection is saved all the same, the detach
        needs it). A database outage is waited out; a failure undoes the
        attach, as nothing records it otherwise.
        """
        finish = event.success() if event is not None else None
        kwargs = {"finish_event": finish} if finish else {}
        self.patience.call(f"record the attached volume {bdm.volume_id}",
                           self.conductor.bdm_update, context, bdm_uuid=bdm.uuid,
                           values={"connection_info": bdm_mod.encode_connection_info(info),
                                   "attach_status": attach_states.ATTACHED},
                           expected_status=attach_states.ATTACHING, **kwargs)
        if finish:
            event.reported = True

    def resume(self, context, driver_instance, bdm):
        """Finish an interrupted attach (see ``attach``); roll it back when that fails."""
        self.attach(context, driver_instance, bdm, resume=True)

    def _undo_attach(self, context, driver_instance, bdm, info, *, attached, connected,
                     failure):
        try:
            if attached:
                self.driver.detach_volume(info, driver_instance, bdm.device_name)
            if connected:
                self._disconnect(context, driver_instance["uuid"], info)
        except Exception as exc:  # noqa: BLE001 - release Cinder and the BDM anyway
            LOG.warning("Could not detach %s after a failed attach: %s",
                        bdm.volume_id, exc)
        try:
            self.cinder.attachment_delete(context.elevated(), bdm.attachment_id)
        except Exception as exc:  # noqa: BLE001
            LOG.warning("Could not delete attachment %s: %s", bdm.attachment_id, exc)
        # Kept (deleted) as ``error`` so a 2.106 client learns why.
        values = attach_states.fault_values(
            attach_states.ERROR, attach_states.fault_code(failure),
            compute_reporter.message_of(failure))
        try:
            self.patience.call(f"record the failed attach of volume {bdm.volume_id}",
                               self.conductor.bdm_destroy, context, bdm_uuid=bdm.uuid,
                               values=values)
        except exception.NotFound:
            pass

    def detach(self, context, driver_instance, bdm, attachment_id):
        """Detach from the domain, delete the attachment, forget the BDM.

        Only this server's attachment (``attachment_id``) goes; the host
        connection stays while another server here uses a multiattach volume.

        A failure before Cinder was told leaves the volume attached
        (``roll_detaching`` undoes the API's ``os-begin_detaching``), and so
        does a failure of the attachment's delete (see ``_delete_attachment``).
        """
        info = bdm.connection_info
        try:
            if info:
                self.driver.detach_volume(info, driver_instance, bdm.device_name)
                self._disconnect(context, driver_instance["uuid"], info)
        except Exception:
            self._roll_detaching(context, bdm)
            raise
        if attachment_id:
            self._delete_attachment(context, bdm, attachment_id)
        self.patience.call(f"forget the detached volume {bdm.volume_id}",
                           self.conductor.bdm_destroy, context, bdm_uuid=bdm.uuid)

    def _roll_detaching(self, context, bdm):
        try:
            self.cinder.roll_detaching(context, bdm.volume_id)
        except Exception as exc:  # noqa: BLE001 - the detach's own error is raised
            LOG.warning("roll_detaching %s failed: %s", bdm.volume_id, exc)

    def _delete_attachment(self, context, bdm, attachment_id):
        """Cinder's side of a detach whose disk already left the guest.

        The Cinder adapter retries a 500 a few times itself. Should the
        delete still fail, the volume goes back to ``in-use`` instead of
        ``detaching`` for ever (which refused every further detach) and the
        error is raised: the BDM stays attached with the fault, and the next
        detach finds the disk gone from the domain and only finishes
        Cinder's side. A delete Cinder did although it answered an error
        counts as done.
        """
        admin = context.elevated()
        try:
            self.cinder.attachment_delete(admin, attachment_id)
        except Exception:
            try:
                self.cinder.attachment_get(admin, attachment_id)
            except exception.VolumeAttachmentNotFound:
                LOG.info("Attachment %s of volume %s is gone although its delete failed",
                         attachment_id, bdm.volume_id)
                return
            except Exception as exc:  # noqa: BLE001 - the delete's own error is raised
                LOG.warning("Could not read attachment %s after its delete failed: %s",
                            attachment_id, exc)
            self._roll_detaching(context, bdm)
            raise
