"""What the conductor's tasks of moves (live migration, resize) share: the refusal.

A move the conductor refuses (no destination, a source too old or down)
has made nothing anywhere yet, so nothing is undone: the server gets its
task back (first, so a client that sees the migration ended sees the
server free), with a fault and an Error event saying why, and the
migration ends with a compare and swap from the statuses it can still be
in (a source that took it meanwhile wins).
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor.tasks import base
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import migration as migration_obj

LOG = logging.getLogger(__name__)


class MoveTask(base.TaskBase):
    """A move's task, run from a cast: nobody to raise to, the failure is in the records."""

    def __init__(self, deps, context, *, instance_uuid, migration_id):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.migration_id = migration_id

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
