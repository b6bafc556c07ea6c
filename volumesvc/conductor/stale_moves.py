"""Moves no compute took: driven again from their records by any conductor.

The API answers a move once it has recorded it (the migration row) and
cast it to a conductor. The bus forgets the cast as soon as a conductor
takes it, so a conductor SIGKILLed before its own cast reached a compute
leaves the move with no process working on it: a live migration
``accepted`` or ``queued``, a cold migration or resize ``pre-migrating``,
an evacuation ``accepted`` or ``pre-migrating`` (its cast to the
destination lost with it). Unlike an attach (``volume_requests.py``), a
move's row is its own claim: every compute step begins with a compare and
swap on its status, and so does each conductor step.

Every conductor therefore looks, every ``[conductor]
volume_request_recovery_interval`` seconds, for such moves unchanged for
``[conductor] move_request_grace`` seconds and runs the move's conductor
task again with what the row keeps (the named or chosen destination, the
admin's ``force`` and the 2.95 ``target_state`` in ``request_options``).
The run checks everything again and casts again; if the first cast does
arrive after all, the compute that takes the move second finds its status
changed and does nothing, and a conductor run that loses a compare and
swap leaves the move to the other. A run that finds the move impossible
now (a destination down, a source back up under an evacuation) ends it as
the first run would have, with a fault. A move still not taken after
``[conductor] live_migration_start_timeout`` is ended
(``tasks/moves.py: expire_unstarted``).
"""

import datetime

from oslo_log import log as logging

from volumesvc.conductor.tasks import evacuate as evacuate_task
from volumesvc.conductor.tasks import live_migrate as live_migrate_task
from volumesvc.conductor.tasks import moves as moves_task
from volumesvc.conductor.tasks import resize as resize_task
from volumesvc.objects import base as objects_base
from volumesvc.objects import migration as migration_obj

LOG = logging.getLogger(__name__)


def _task(deps, context, migration):
    """The conductor task of ``migration``, built from its row."""
    options = migration.request_options or {}
    common = {"instance_uuid": migration.instance_uuid, "migration_id": migration.id,
              "again": True}
    if migration.migration_type == migration_obj.LIVE_MIGRATION:
        return live_migrate_task.LiveMigrateTask(deps, context, host=migration.dest_compute,
                                                 force=bool(options.get("force")), **common)
    if migration.migration_type == migration_obj.EVACUATION:
        return evacuate_task.EvacuateTask(deps, context, host=migration.dest_compute,
                                          force=bool(options.get("force")),
                                          target_state=options.get("target_state"), **common)
    # A cold move's row gets its destination only once a conductor chose it.
    return resize_task.ResizeTask(deps, context,
                                  host=migration.dest_compute or options.get("host"), **common)


def redrive(deps, context) -> list[int | None]:
    """Run again the conductor task of each move no compute took in time; their ids."""
    grace = deps.conf.conductor.move_request_grace
    cutoff = objects_base.utcnow() - datetime.timedelta(seconds=grace)
    driven = []
    for types, statuses, _task_state, _name in moves_task.UNSTARTED:
        for migration in migration_obj.unstarted_before(deps.db, context, cutoff,
                                                        migration_types=types,
                                                        statuses=statuses):
            LOG.warning("%s %s of %s is still %s after %d s with no compute on it; "
                        "driving it again", migration.migration_type.capitalize(),
                        migration.uuid, migration.instance_uuid, migration.status, grace)
            _task(deps, context, migration).execute()
            driven.append(migration.id)
    return driven
