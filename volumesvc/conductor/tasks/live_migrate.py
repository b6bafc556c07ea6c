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


from oslo_log import log as logging

from volumesvc import exception, version
from volumesvc.conductor.tasks import moves
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_live_migrate_instance"


class LiveMigrateTask(moves.MoveTask):
    def _execute(self):
        starts = [migration_obj.ACCEPTED] + ([migration_obj.QUEUED] if self.again else [])
        try:
            migration = migration_obj.save(self.db, self.context, self.migration_id,
                                           {"status": migration_obj.QUEUED},
                                           expected_status=starts)
        except exception.InvalidMigrationState as exc:
            return self.taken(exc)
        instance = self.server_on_its_source(task_states.MIGRATING,
                                             min_version=version.LIVE_MIGRATION_VERSION,
                                             do="live-migrate")
        bdms = bdm_obj.list_by_instance(self.db, self.context, instance.uuid)
        dest = self.destination(instance,
                                self.check_disks(bdms, "live-migrated (no block migration)"),
                                min_version=version.LIVE_MIGRATION_VERSION)
        try:
            migration = migration_obj.save(self.db, self.context, migration.id, {
                "source_compute": instance.host, "source_node": instance.node or instance.host,
                "dest_compute": dest, "dest_node": dest}, expected_status=[migration_obj.QUEUED])
        except exception.InvalidMigrationState as exc:
            return self.taken(exc)
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
