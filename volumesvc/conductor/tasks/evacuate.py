"""Evacuation, the conductor's part: check or choose the destination, then cast it.

The API has set the server's task ``rebuilding``, recorded the ``evacuate``
action and made the migration row (``evacuation``, ``accepted``). Here,
before anything is made anywhere, the request is checked again with what
may have changed since the answer: the server's compute is still down (an
evacuation of a server whose host runs it would start the guest twice on
the same volumes), every disk is a Cinder volume, and the destination —
named by the admin, or chosen by the scheduler among the other hosts — is
up, enabled, new enough to evacuate, has every capability the server's
volumes need and room for its flavor (a named host with ``force`` skips
only the room). The destination compute then owns the move
(``compute/evacuate.py``).

A refused request leaves the server where and as it was: no task, the
migration ``error``, a fault and an Error ``conductor_evacuate_instance``
event saying why. Nothing was made yet, so nothing is undone.
"""


from oslo_log import log as logging

from volumesvc import exception, version
from volumesvc.conductor.tasks import moves
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_evacuate_instance"


class EvacuateTask(moves.MoveTask):
    def __init__(self, deps, context, *, instance_uuid, migration_id, host=None, force=False,
                 target_state=None, again=False):
        super().__init__(deps, context, instance_uuid=instance_uuid, migration_id=migration_id,
                         host=host, force=force, again=again)
        self.target_state = target_state

    def _execute(self):
        migration = migration_obj.get(self.db, self.context, self.migration_id)
        # Driven again, a move already cast (``pre-migrating``) is cast again:
        # the destination takes it with a compare and swap.
        starts = [migration_obj.ACCEPTED] + (
            [migration_obj.PRE_MIGRATING] if self.again else [])
        if migration.status not in starts:
            # A cast delivered twice: the first one owns the evacuation.
            LOG.info("Evacuation %s of %s is %s already; nothing to do", migration.uuid,
                     self.instance_uuid, migration.status)
            return None
        instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        if instance.task_state != task_states.REBUILDING or not instance.host:
            raise exception.InstanceInvalidState(
                instance_uuid=instance.uuid, attr="task_state", state=instance.task_state,
                method="evacuate")
        # NOTE: no cache: only a fresh "down" may let a second guest start.
        source = compute_host.get(self.conf, self.db, self.context, instance.host)
        if source.up:
            raise exception.MigrationPreCheckError(
                reason=f"Compute service of {instance.host} is still in use.")
        bdms = bdm_obj.list_by_instance(self.db, self.context, instance.uuid)
        dest = self.destination(instance, self.check_disks(bdms, "evacuated"),
                                min_version=version.EVACUATE_VERSION)
        try:
            migration = migration_obj.save(self.db, self.context, migration.id, {
                "status": migration_obj.PRE_MIGRATING, "source_compute": instance.host,
                "source_node": instance.node or instance.host, "dest_compute": dest,
                "dest_node": dest}, expected_status=starts)
        except exception.InvalidMigrationState as exc:
            return self.taken(exc)
        LOG.info("Evacuation %s of %s: %s -> %s", migration.uuid, instance.uuid,
                 instance.host, dest)
        self.compute.evacuate_instance(self.context, host=dest, instance=instance.to_dict(),
                                       migration=migration.to_dict(),
                                       target_state=self.target_state)
        return dest

    def rollback(self, exc):
        self.refuse(exc, task_state=task_states.REBUILDING, event=EVENT,
                    expected_status=[migration_obj.ACCEPTED, migration_obj.PRE_MIGRATING])
