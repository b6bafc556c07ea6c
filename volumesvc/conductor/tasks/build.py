"""Build: choose a compute host for a new instance and cast the build to it."""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor import scheduling
from volumesvc.conductor.tasks import base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import task_states, vm_states

LOG = logging.getLogger(__name__)



class BuildTask(base.TaskBase):
    """Schedule one instance and cast ``build_and_run_instance`` to its host."""

    def __init__(self, deps, context, *, instance_uuid, request_spec):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.request_spec = request_spec or {}

    def _execute(self):
        try:
            instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        except exception.InstanceNotFound:
            LOG.info("Instance %s was deleted before it was scheduled", self.instance_uuid)
            return None
        try:
            host = scheduling.place(
                self.conf, self.db, self.context, instance.uuid,
                scheduling.Requirements.from_request_spec(self.request_spec),
                expected_task_state=[task_states.SCHEDULING], probe=self.answers)
            instance = instance_obj.get_by_uuid(self.db, self.context, instance.uuid)
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            LOG.info("Instance %s changed while scheduling (deleted?); not building",
                     self.instance_uuid)
            return None
        bdms = [b.to_dict() for b in bdm_obj.list_by_instance(self.db, self.context,
                                                              instance.uuid)]
        self.compute.build_and_run_instance(
            self.context, host=host, instance=instance.to_dict(), bdms=bdms,
            request_spec=self.request_spec)
        return host

    def rollback(self, exc):
        """The build never reached a compute: the instance goes ERROR with a fault.

        Volumes that the API reserved for ``source_type: volume`` BDMs keep
        their attachment: the user deletes the ERROR server, which releases
        them, exactly as after a failed build on a compute.
        """
        base.fail_instance(self.db, self.context, self.instance_uuid, exc,
                           {"vm_state": vm_states.ERROR, "task_state": None})
        message = base.message_of(exc)
        LOG.warning("Build of instance %s failed in the conductor: %s",
                    self.instance_uuid, message)

    def execute(self):
        # NOTE: a cast has nobody to raise to; the failure is in the instance.
        try:
            return super().execute()
        except Exception:  # noqa: BLE001
            return None
