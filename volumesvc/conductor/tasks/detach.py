"""Detach: find the BDM, tell its compute once, and own the re-run and the giving up.

The API has made the checks a client must hear about at once (404, 400,
409), begun Cinder's detach (``os-begin_detaching``), marked the BDM
``detaching`` (so a client reading the attachments right after its 202 sees
the detach under way, API 2.106) and recorded the ``detach_volume`` action.
From there this task owns the detach:

* a server with a host: its compute is cast one ``detach_volume``; the
  compute does the host side (the domain, the Cinder attachment, the BDM)
  and, if that fails, puts the BDM back ``attached`` with the reason;
* a shelved-offloaded server has no compute: the Cinder attachment and
  the BDM are deleted here;
* a request whose conductor died is run again (``recovered=True``, from
  ``conductor/volume_requests.py``): the BDM gone means done; otherwise
  the same step is taken again, and the compute skips a detach it has
  started already (``compute/started_work.py``);
* a request that failed here, or that kept losing its conductor
  (``give_up``), is undone: the volume ``in-use`` again, the BDM
  ``attached`` with the reason as its fault and a
  ``conductor_detach_volume`` Error event on the request's action.
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.common.outage import database_down
from volumesvc.conductor.tasks import base, resume
from volumesvc.objects import attachment_status
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import attach_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_detach_volume"


class DetachTask(base.TaskBase):
    def __init__(self, deps, context, *, instance_uuid, volume_id, attachment_id=None,
                 recovered=False):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.volume_id = volume_id
        # The Cinder attachment the API chose to delete (None: the BDM's).
        self.attachment_id = attachment_id
        # A re-run of an accepted request whose first conductor died.
        self.recovered = recovered

    def _execute(self):
        try:
            instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        except exception.InstanceNotFound:
            if self.recovered:
                return  # deleted meanwhile: its volumes went with it
            raise
        if self.recovered:
            bdm = resume.live_bdm(self.db, self.context, instance.uuid, self.volume_id)
            if bdm is None:
                LOG.info("Re-run detach of volume %s from %s: already done",
                         self.volume_id, instance.uuid)
                return
        else:
            bdm = bdm_obj.get_by_volume_and_instance(self.db, self.context, self.volume_id,
                                                     instance.uuid)
        attachment_id = self.attachment_id or bdm.attachment_id
        if not instance.host:
            # Shelved-offloaded: no domain, only Cinder and the BDM. Cinder
            # ignores the delete of an attachment it no longer has (a re-run).
            self._detach_offloaded(bdm, attachment_id)
            return
        self.compute.detach_volume(self.context, host=instance.host,
                                   instance=instance.to_dict(), bdm=bdm.to_dict(),
                                   attachment_id=attachment_id, recovered=self.recovered)

    def _detach_offloaded(self, bdm, attachment_id):
        """Delete the Cinder attachment, then the BDM (kept when Cinder failed)."""
        try:
            if attachment_id:
                self.cinder.attachment_delete(self.context.elevated(), attachment_id)
        except Exception:
            try:
                self.cinder.roll_detaching(self.context, bdm.volume_id)
            except Exception as exc:  # noqa: BLE001 - Cinder's own error is raised
                LOG.warning("roll_detaching %s failed: %s", bdm.volume_id, exc)
            raise
        bdm_obj.destroy(self.db, self.context, bdm.uuid)

    def rollback(self, exc):
        if database_down(exc):
            # Kept for the next recovery pass, which runs it again: undoing
            # now would put back a BDM that pass then detaches.
            return
        self.undo(exc)

    def give_up(self, exc):
        """The request kept losing its conductor: undo it, with ``exc`` as the reason."""
        self.undo(exc)

    def undo(self, exc):
        """The volume ``in-use`` again, the BDM ``attached`` with the fault, an Error event.

        Nothing is touched when the BDM is gone: the detach got done after all.
        """
        message = base.message_of(exc)
        bdm = resume.live_bdm(self.db, self.context, self.instance_uuid, self.volume_id)
        if bdm is None:
            return
        try:
            instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        except exception.InstanceNotFound:
            return
        if instance.host:
            # NOTE: the API begins Cinder's detach only for a server with a host.
            try:
                self.cinder.roll_detaching(self.context, self.volume_id)
            except Exception as err:  # noqa: BLE001 - the BDM is put back anyway
                LOG.warning("roll_detaching %s failed: %s", self.volume_id, err)
        attachment_status.save_if(self.db, self.context, bdm.uuid, attach_states.fault_values(
            attach_states.ATTACHED, 500, message), attach_states.DETACHING)
        try:
            action_obj.event_start(self.db, self.context, self.instance_uuid,
                                   self.context.request_id, EVENT)
            action_obj.event_finish(self.db, self.context, self.instance_uuid,
                                    self.context.request_id, EVENT, result="Error",
                                    details=message)
        except exception.NotFound:
            pass
        LOG.info("Detach of volume %s from %s failed and was undone: %s",
                 self.volume_id, self.instance_uuid, message)
