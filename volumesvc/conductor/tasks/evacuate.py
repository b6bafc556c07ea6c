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

import datetime

from oslo_log import log as logging

from volumesvc import exception, version
from volumesvc.conductor import scheduling
from volumesvc.conductor.tasks import base
from volumesvc.objects import base as objects_base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_fault as fault_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_evacuate_instance"


class EvacuateTask(base.TaskBase):
    def __init__(self, deps, context, *, instance_uuid, migration_id, host=None, force=False,
                 target_state=None):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.migration_id = migration_id
        self.host = host
        self.force = force
        self.target_state = target_state

    def _precheck(self, reason):
        return exception.MigrationPreCheckError(reason=reason)

    def _check_disks(self, bdms):
        if any(b.destination_type == "local" and b.boot_index == 0 for b in bdms):
            raise self._precheck(
                f"server {self.instance_uuid} has a local root disk: only servers whose "
                "disks are all Cinder volumes can be evacuated")
        return scheduling.volume_needs(self.cinder, self.context, bdms)

    def _destination(self, instance, needs):
        flavor = instance.flavor or {}
        room = not (self.host and self.force)
        requirements = scheduling.Requirements(
            needs=tuple(needs), hosts=(self.host,) if self.host else None,
            min_version=version.EVACUATE_VERSION,
            vcpus=int(flavor.get("vcpus") or 0) if room else 0,
            memory_mb=int(flavor.get("memory_mb") or 0) if room else 0)
        try:
            return scheduling.pick_host(
                self.conf, self.db, self.context, requirements,
                exclude={instance.host: "the server's own host"})
        except scheduling.NoValidHost as exc:
            if self.host:
                raise self._precheck(f"host {self.host} cannot take server "
                                     f"{instance.uuid}: {exc.format_message()}") from exc
            raise

    def _execute(self):
        migration = migration_obj.get(self.db, self.context, self.migration_id)
        if migration.status != migration_obj.ACCEPTED:
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
            raise self._precheck(f"Compute service of {instance.host} is still in use.")
        bdms = bdm_obj.list_by_instance(self.db, self.context, instance.uuid)
        dest = self._destination(instance, self._check_disks(bdms))
        migration = migration_obj.save(self.db, self.context, migration.id, {
            "status": migration_obj.PRE_MIGRATING, "source_compute": instance.host,
            "source_node": instance.node or instance.host, "dest_compute": dest,
            "dest_node": dest}, expected_status=[migration_obj.ACCEPTED])
        LOG.info("Evacuation %s of %s: %s -> %s", migration.uuid, instance.uuid,
                 instance.host, dest)
        self.compute.evacuate_instance(self.context, host=dest, instance=instance.to_dict(),
                                       migration=migration.to_dict(),
                                       target_state=self.target_state)
        return dest

    def rollback(self, exc):
        """No task (the server first), then the migration ``error``."""
        try:
            instance_obj.save(self.db, self.context, self.instance_uuid, {"task_state": None},
                              expected_task_state=[task_states.REBUILDING])
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            pass
        else:
            base.fail_instance(self.db, self.context, self.instance_uuid, exc, {},
                               event=EVENT)
        try:
            migration_obj.save(self.db, self.context, self.migration_id,
                               {"status": migration_obj.ERROR},
                               expected_status=[migration_obj.ACCEPTED,
                                                migration_obj.PRE_MIGRATING])
        except exception.VolumesvcException as err:
            LOG.warning("Migration %s not set to error: %s", self.migration_id, err)
        LOG.warning("Evacuation of %s refused: %s", self.instance_uuid, base.message_of(exc))

    def execute(self):
        # NOTE: a cast has nobody to raise to; the failure is in the records.
        try:
            return super().execute()
        except Exception:  # noqa: BLE001
            return None


def expire_unstarted(conf, db, context):
    """End the evacuations no conductor took in time (``live_migration_start_timeout``).

    The API's cast was lost, or the conductor that took it died before its
    first write: the migration is still ``accepted`` and the server stuck in
    ``rebuilding``. A compare and swap on the migration's status: a
    conductor that takes it meanwhile wins. Returns the ended migrations' ids.
    """
    timeout = conf.conductor.live_migration_start_timeout
    cutoff = objects_base.utcnow() - datetime.timedelta(seconds=timeout)
    ended = []
    for migration in migration_obj.unstarted_before(
            db, context, cutoff, migration_types=(migration_obj.EVACUATION,),
            statuses=(migration_obj.ACCEPTED,)):
        try:
            migration_obj.save(db, context, migration.id, {"status": migration_obj.ERROR},
                               expected_status=[migration_obj.ACCEPTED])
        except exception.InvalidMigrationState:
            continue
        try:
            instance_obj.save(db, context, migration.instance_uuid, {"task_state": None},
                              expected_task_state=[task_states.REBUILDING])
            fault_obj.create(db, context, instance_uuid=migration.instance_uuid, code=500,
                             message=f"Evacuation not started within {timeout} s")
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            pass
        LOG.warning("Evacuation %s of %s was not started in time; ended", migration.uuid,
                    migration.instance_uuid)
        ended.append(migration.id)
    return ended
