"""What the conductor's tasks of moves (live migration, resize, evacuation) share.

The checks: every disk a Cinder volume, and the destination named by the
admin or chosen by the scheduler (up, enabled, new enough, the
capabilities the server's volumes need, room for the flavor unless a
named host is ``force``d).

The refusal: a move the conductor refuses has made nothing anywhere yet,
so nothing is undone: the server gets its task back (first, so a client
that sees the migration ended sees the server free), with a fault and an
Error event saying why, and the migration ends with a compare and swap
from the statuses it can still be in (a compute that took it meanwhile
wins).

The expiry: a move whose request no conductor or no compute ever took
(the cast was lost, or the process died before its first write) is ended
after ``[conductor] live_migration_start_timeout``.
"""

import datetime

from oslo_log import log as logging

from volumesvc import exception
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


class MoveTask(base.TaskBase):
    """A move's task, run from a cast: nobody to raise to, the failure is in the records."""

    def __init__(self, deps, context, *, instance_uuid, migration_id, host=None, force=False,
                 again=False):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.migration_id = migration_id
        self.host = host  # the destination the admin named (None: the scheduler's)
        self.force = force  # a named host taken without checking its room
        # Driven again from the row (``stale_moves.redrive``): a conductor may have
        # got further than the API's status before it died.
        self.again = again

    def taken(self, exc):
        """Log that another run of this move got there first (its compare and swap lost).

        Not a failure: nothing is rolled back, the other run owns the move.
        """
        LOG.info("Move %s of %s is another run's: %s", self.migration_id, self.instance_uuid,
                 base.message_of(exc))

    def server_on_its_source(self, task_state, *, min_version, do):
        """The server, in ``task_state`` on a source compute that is up and at least
        ``min_version``; ``do`` names the move for the messages (``live-migrate``...)."""
        instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        if instance.task_state != task_state or not instance.host:
            raise exception.InstanceInvalidState(
                instance_uuid=instance.uuid, attr="task_state", state=instance.task_state,
                method=do)
        source = compute_host.get(self.conf, self.db, self.context, instance.host,
                                  cache=self.deps.up_cache)
        if not source.up:
            raise exception.MigrationPreCheckError(
                reason=f"the server's compute {instance.host} is down")
        if source.version < min_version:
            raise exception.MigrationPreCheckError(
                reason=f"the server's compute {instance.host} is too old to {do} "
                       f"(service version {source.version} < {min_version})")
        return instance

    def check_disks(self, bdms, done):
        """The capabilities the server's volumes need; a refusal for a local root disk.

        ``done``: what the move does, for the message (``live-migrated``...).
        """
        if bdm_obj.has_local_root(bdms):
            raise exception.MigrationPreCheckError(
                reason=f"server {self.instance_uuid} has a local root disk: only servers "
                       f"whose disks are all Cinder volumes can be {done}")
        return scheduling.volume_needs(self.cinder, self.context, bdms)

    def destination(self, instance, needs, *, min_version, flavor=None, hosts=None,
                    exclude=None):
        """The named host once checked, or the scheduler's choice among the others.

        ``flavor``: the one to find room for (the server's own by default);
        ``hosts``/``exclude``: the candidates (the named host) and the hosts
        left out with why (the server's own), when the move wants others.
        """
        flavor = flavor if flavor is not None else (instance.flavor or {})
        room = not (self.host and self.force)
        requirements = scheduling.Requirements(
            needs=tuple(needs),
            hosts=hosts if hosts is not None else (self.host,) if self.host else None,
            min_version=min_version,
            vcpus=int(flavor.get("vcpus") or 0) if room else 0,
            memory_mb=int(flavor.get("memory_mb") or 0) if room else 0)
        if exclude is None:
            exclude = {instance.host: "the server's own host"}
        try:
            return scheduling.pick_host(self.conf, self.db, self.context, requirements,
                                        exclude=exclude, probe=self.answers)
        except scheduling.NoValidHost as exc:
            if self.host:
                raise exception.MigrationPreCheckError(
                    reason=f"host {self.host} cannot take server {instance.uuid}: "
                           f"{exc.format_message()}") from exc
            raise

    def refuse(self, exc, *, task_state, event, expected_status, status=migration_obj.ERROR):
        """No task, a fault and an Error ``event``; the migration ``status``."""
        try:
            instance_obj.save(self.db, self.context, self.instance_uuid, {"task_state": None},
                              expected_task_state=[task_state])
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            pass
        else:
            base.fail_instance(self.db, self.context, self.instance_uuid, exc, {},
                               event=event)
        try:
            migration_obj.save(self.db, self.context, self.migration_id, {"status": status},
                               expected_status=expected_status)
        except exception.VolumesvcException as err:
            LOG.warning("Migration %s not set to %s: %s", self.migration_id, status, err)
        LOG.warning("Move of %s refused: %s", self.instance_uuid, base.message_of(exc))

    def execute(self):
        try:
            return super().execute()
        except Exception:  # noqa: BLE001
            return None


# (migration types, statuses of a move no compute took, the server's task
# then, name): what the expiry ends and ``stale_moves`` drives again.
UNSTARTED = (
    ((migration_obj.LIVE_MIGRATION,), (migration_obj.ACCEPTED, migration_obj.QUEUED),
     task_states.MIGRATING, "Live migration"),
    (migration_obj.COLD_TYPES, (migration_obj.PRE_MIGRATING,), task_states.RESIZE_PREP,
     "Resize"),
    ((migration_obj.EVACUATION,), (migration_obj.ACCEPTED, migration_obj.PRE_MIGRATING),
     task_states.REBUILDING, "Evacuation"),
)


def expire_unstarted(conf, db, context):
    """End the moves nobody took in time (``live_migration_start_timeout``).

    Live migrations still ``accepted``/``queued`` (no source took them),
    resizes and cold migrations still ``pre-migrating`` (no source),
    evacuations still ``accepted`` or ``pre-migrating`` (no destination took
    them; one that takes it later finds it ended and does nothing): each
    ends ``error`` with a compare and swap on its status (whoever takes it
    meanwhile wins), and its server gets its task back with a fault.
    Returns the ended ids.
    """
    timeout = conf.conductor.live_migration_start_timeout
    cutoff = objects_base.utcnow() - datetime.timedelta(seconds=timeout)
    ended = []
    for types, statuses, task_state, name in UNSTARTED:
        # NOTE: from its creation: a conductor driving it again
        # (``stale_moves.py``) changes the row each time.
        for migration in migration_obj.unstarted_before(db, context, cutoff,
                                                        migration_types=types,
                                                        statuses=statuses, created=True):
            try:
                migration_obj.save(db, context, migration.id,
                                   {"status": migration_obj.ERROR},
                                   expected_status=list(statuses))
            except exception.InvalidMigrationState:
                continue
            try:
                instance_obj.save(db, context, migration.instance_uuid, {"task_state": None},
                                  expected_task_state=[task_state])
                fault_obj.create(db, context, instance_uuid=migration.instance_uuid,
                                 code=500, message=f"{name} not started within {timeout} s")
            except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
                pass
            LOG.warning("%s %s of %s was not started in time; ended", name, migration.uuid,
                        migration.instance_uuid)
            ended.append(migration.id)
    return ended
