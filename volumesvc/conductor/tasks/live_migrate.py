"""Live migration, the conductor's part: check or choose the destination, then cast.

The API has set the server's task ``migrating``, recorded the
``live-migration`` action and made the migration row (``accepted``). Here,
before anything is made anywhere, the move is checked as Nova's conductor
checks it (``MigrationPreCheckError`` names what failed): the source is up
and new enough, every disk of the server is a Cinder volume (a local root
disk would need a block migration, which volumesvc does not do), and the
destination — named by the admin, or chosen by the scheduler among the
other hosts — is up, enabled, new enough, has every capability the
server's volumes need and room for its flavor (a named host with ``force``
skips only the room). The source compute then owns the move
(``compute/live_migration.py``).

A failed check leaves the server where and as it was: no task, the
migration ``error``, a fault and an Error ``conductor_live_migrate_instance``
event saying why. Nothing was made yet, so nothing is undone.
"""

import datetime

from oslo_log import log as logging

from volumesvc import exception, version
from volumesvc.conductor import scheduling
from volumesvc.conductor.tasks import moves
from volumesvc.objects import base as objects_base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_fault as fault_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_live_migrate_instance"


class LiveMigrateTask(moves.MoveTask):
    def __init__(self, deps, context, *, instance_uuid, migration_id, host=None, force=False):
        super().__init__(deps, context, instance_uuid=instance_uuid, migration_id=migration_id)
        self.host = host
        self.force = force

    def _precheck(self, reason):
        return exception.MigrationPreCheckError(reason=reason)

    def _check_disks(self, bdms):
        if any(b.destination_type == "local" and b.boot_index == 0 for b in bdms):
            raise self._precheck(
                f"server {self.instance_uuid} has a local root disk: only servers "
                "whose disks are all Cinder volumes can be live-migrated (no block "
                "migration)")
        return scheduling.volume_needs(self.cinder, self.context, bdms)

    def _destination(self, instance, needs):
        flavor = instance.flavor or {}
        room = not (self.host and self.force)
        requirements = scheduling.Requirements(
            needs=tuple(needs), hosts=(self.host,) if self.host else None,
            min_version=version.LIVE_MIGRATION_VERSION,
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
        migration = migration_obj.save(self.db, self.context, self.migration_id,
                                       {"status": migration_obj.QUEUED},
                                       expected_status=[migration_obj.ACCEPTED])
        instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        if instance.task_state != task_states.MIGRATING or not instance.host:
            raise exception.InstanceInvalidState(
                instance_uuid=instance.uuid, attr="task_state", state=instance.task_state,
                method="live migration")
        source = compute_host.get(self.conf, self.db, self.context, instance.host,
                                  cache=self.deps.up_cache)
        if not source.up:
            raise self._precheck(f"the server's compute {instance.host} is down")
        if source.version < version.LIVE_MIGRATION_VERSION:
            raise self._precheck(f"the server's compute {instance.host} is too old to "
                                 "live-migrate (service version "
                                 f"{source.version} < {version.LIVE_MIGRATION_VERSION})")
        bdms = bdm_obj.list_by_instance(self.db, self.context, instance.uuid)
        dest = self._destination(instance, self._check_disks(bdms))
        migration = migration_obj.save(self.db, self.context, migration.id, {
            "source_compute": instance.host, "source_node": instance.node or instance.host,
            "dest_compute": dest, "dest_node": dest}, expected_status=[migration_obj.QUEUED])
        LOG.info("Live migration %s of %s: %s -> %s", migration.uuid, instance.uuid,
                 instance.host, dest)
        self.compute.live_migration(self.context, host=instance.host,
                                    instance=instance.to_dict(), migration=migration.to_dict())
        return dest

    def rollback(self, exc):
        """No task, then the migration ``error`` (``cancelled`` when aborted while queued)."""
        try:
            aborted = migration_obj.get(self.db, self.context,
                                        self.migration_id).requested == migration_obj.ABORT
        except exception.VolumesvcException:
            aborted = False
        self.refuse(exc, task_state=task_states.MIGRATING, event=EVENT,
                    expected_status=[migration_obj.ACCEPTED, migration_obj.QUEUED],
                    status=migration_obj.CANCELLED if aborted else migration_obj.ERROR)


def expire_unstarted(conf, db, context):
    """End the moves no source took in time (``live_migration_start_timeout``): live
    migrations, and resizes and cold migrations still ``pre-migrating``.

    A compare and swap on the migration's status: a source that takes the
    move meanwhile (``queued`` → ``preparing``) wins, and the move goes on.
    Returns the ended migrations' ids.
    """
    cutoff = objects_base.utcnow() - datetime.timedelta(
        seconds=conf.conductor.live_migration_start_timeout)
    ended = []
    unstarted = (migration_obj.unstarted_before(db, context, cutoff)
                 + migration_obj.unstarted_before(
                     db, context, cutoff, migration_types=migration_obj.COLD_TYPES,
                     statuses=(migration_obj.PRE_MIGRATING,)))
    for migration in unstarted:
        try:
            migration_obj.save(db, context, migration.id, {"status": migration_obj.ERROR},
                               expected_status=[migration_obj.ACCEPTED,
                                                migration_obj.QUEUED,
                                                migration_obj.PRE_MIGRATING])
        except exception.InvalidMigrationState:
            continue
        live = migration.migration_type == migration_obj.LIVE_MIGRATION
        try:
            instance_obj.save(db, context, migration.instance_uuid, {"task_state": None},
                              expected_task_state=[task_states.MIGRATING if live
                                                   else task_states.RESIZE_PREP])
            fault_obj.create(db, context, instance_uuid=migration.instance_uuid, code=500,
                             message=f"{'Live migration' if live else 'Resize'} not "
                                     "started within "
                                     f"{conf.conductor.live_migration_start_timeout} s")
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            pass
        LOG.warning("Live migration %s of %s was not started in time; ended",
                    migration.uuid, migration.instance_uuid)
        ended.append(migration.id)
    return ended
