"""Swap volume: reserve the new volume for the server and hand the copy to its compute.

The API has checked the request, set the ``swapping_volume`` task state and
recorded the ``swap_volume`` action. Here the new volume gets its Cinder
attachment (no connector yet: ``reserved``) and the compute is asked to do the
host's part (compute/swap.py). A failure before the cast undoes exactly that:
the new attachment is deleted, Cinder's migration (when Cinder started one) is
told it failed, the task state is cleared and the action says why.
"""

import traceback

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor.tasks import base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.virt import block_device
from volumesvc.volume import migration, reserve

LOG = logging.getLogger(__name__)

EVENT = "conductor_swap_volume"
COMPUTE_EVENT = "compute_swap_volume"


class SwapTask(base.TaskBase):
    def __init__(self, deps, context, *, instance_uuid, old_volume_id, new_volume_id):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.old_volume_id = old_volume_id
        self.new_volume_id = new_volume_id
        self.attachment_id = None

    def _execute(self):
        instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        if not instance.host:
            raise exception.InstanceInvalidState(
                instance_uuid=instance.uuid, attr="host", state=None, method="swap_volume")
        bdm = bdm_obj.get_by_volume_and_instance(self.db, self.context, self.old_volume_id,
                                                 instance.uuid)
        attachment = reserve.attachment_create(self.conf, self.cinder, self.context,
                                               self.new_volume_id, instance.uuid,
                                               mode=block_device.attach_mode(bdm))
        self.attachment_id = attachment["id"]
        self.compute.swap_volume(self.context, host=instance.host, instance=instance.to_dict(),
                                 old_volume_id=self.old_volume_id,
                                 new_volume_id=self.new_volume_id,
                                 new_attachment_id=self.attachment_id)

    def rollback(self, exc):
        context = self.context.elevated()
        if self.attachment_id:
            try:
                self.cinder.attachment_delete(context, self.attachment_id)
            except exception.VolumesvcException as err:
                LOG.warning("Could not delete attachment %s: %s", self.attachment_id, err)
        migration.fail(self.cinder, context, self.old_volume_id, self.new_volume_id)
        try:
            instance_obj.save(self.db, self.context, self.instance_uuid, {"task_state": None})
            action_obj.event_start(self.db, self.context, self.instance_uuid,
                                   self.context.request_id, EVENT)
            action_obj.event_finish(
                self.db, self.context, self.instance_uuid, self.context.request_id, EVENT,
                result="Error", traceback=traceback.format_exc(),
                details=f"Swapping volume {self.old_volume_id} for {self.new_volume_id} "
                        f"failed: {base.message_of(exc)}")
        except exception.NotFound:
            pass  # the instance is gone
        LOG.info("Swap of volume %s on %s failed and was rolled back: %s",
                 self.old_volume_id, self.instance_uuid, exc)

