"""Delete: on the instance's compute when it is up, locally when it is not."""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor.tasks import base
from volumesvc.conductor.tasks import resize as resize_task
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import vm_states
from volumesvc.volume import cleanup

LOG = logging.getLogger(__name__)


class DeleteTask(base.TaskBase):
    """Cast ``terminate_instance`` to the host, or clean up here (Nova's local delete).

    A server that never reached a host, or whose host is down, has no domain
    anyone could reach; its Cinder attachments and delete-on-termination
    volumes are released from here so nothing leaks.
    """

    def __init__(self, deps, context, *, instance_uuid):
        super().__init__(deps, context, instance_uuid=instance_uuid)

    def _execute(self):
        try:
            instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        except exception.InstanceNotFound:
            return
        bdms = [b.to_dict() for b in bdm_obj.list_by_instance(self.db, self.context,
                                                              instance.uuid)]
        if instance.vm_state == vm_states.RESIZED:
            self._confirm_resize(instance)
        if instance.host and compute_host.get(self.conf, self.db, self.context, instance.host).up:
            self.compute.terminate_instance(
                self.context, host=instance.host, instance=instance.to_dict(), bdms=bdms)
            return
        if instance.host:
            # NOTE: "down" only means no recent heartbeat: a starved compute
            # may still run the domain, which keeps its volumes open until
            # that compute's running_deleted_instance_action destroys it.
            LOG.warning("Deleting instance %s locally (host %s is down); the compute may "
                        "still be running its domain, which its periodic check of "
                        "domains of deleted servers then destroys ([DEFAULT] "
                        "running_deleted_instance_action)", instance.uuid, instance.host)
        else:
            LOG.info("Deleting instance %s locally (host unset)", instance.uuid)
        cleanup.release_instance(self.cinder, self.context.elevated(), instance.uuid, bdms,
                                 timeout=self.conf.compute.volume_wait_timeout,
                                 page_size=self.conf.cinder.list_page_size)
        instance_obj.destroy(self.db, self.context, instance.uuid)
        if self.context.request_id:
            try:
                action_obj.action_finish(self.db, self.context, instance.uuid,
                                         self.context.request_id)
            except exception.NotFound:
                pass

    def _confirm_resize(self, instance):
        """A server deleted in ``VERIFY_RESIZE``: its move is confirmed first, as Nova's.

        The migration does not stay ``finished`` for ever (holding room on
        its source in the scheduler's count), and the source removes what
        the server left there.
        """
        migration = migration_obj.latest_cold(self.db, self.context, instance.uuid,
                                              [migration_obj.FINISHED])
        if migration is None:
            return
        try:
            migration_obj.save(self.db, self.context, migration.id,
                               {"status": migration_obj.CONFIRMED},
                               expected_status=[migration_obj.FINISHED])
            resize_task.cleanup_source(self.deps, self.context, instance.uuid, migration.id)
        except Exception as exc:  # noqa: BLE001 - the delete goes on
            LOG.warning("Could not confirm migration %s of deleted server %s: %s",
                        migration.uuid, instance.uuid, exc)

    def execute(self):
        try:
            return super().execute()
        except Exception:  # noqa: BLE001 - a cast has nobody to raise to
            LOG.exception("Delete of instance %s failed", self.instance_uuid)
            try:
                instance_obj.save(self.db, self.context, self.instance_uuid,
                                  {"vm_state": vm_states.ERROR, "task_state": None})
            except exception.NotFound:
                pass
