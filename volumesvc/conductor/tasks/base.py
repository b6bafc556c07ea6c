"""Conductor tasks: one multi-step workflow per class, with its undo."""

import traceback

from oslo_log import log as logging
from oslo_utils import excutils

from volumesvc import exception
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import instance_fault as fault_obj

LOG = logging.getLogger(__name__)


class TaskBase:
    """``execute()`` runs ``_execute()``; on any failure ``rollback()`` runs first.

    Subclasses record what they made as they go so ``rollback`` undoes
    exactly that (no half-made attachments, no lost records).
    """

    def __init__(self, context, instance_uuid):
        self.context = context
        self.instance_uuid = instance_uuid

    def execute(self):
        try:
            return self._execute()
        except Exception as exc:
            with excutils.save_and_reraise_exception():
                try:
                    self.rollback(exc)
                except Exception:  # noqa: BLE001 - keep the original error
                    LOG.exception("Rollback of %s for instance %s failed",
                                  type(self).__name__, self.instance_uuid)

    def _execute(self):
        raise NotImplementedError()

    def rollback(self, exc):
        """Undo what ``_execute`` did before failing (default: nothing)."""


def message_of(exc):
    return exc.format_message() if isinstance(exc, exception.VolumesvcException) else str(exc)


def fail_instance(db, context, instance_uuid, exc, values, *, event=None):
    """A conductor step failed: save ``values``, add a fault and an Error ``event``.

    The event goes under the action the API recorded for ``context``'s
    request (none recorded: only the fault). A deleted instance is left alone.
    The state and the fault are one transaction: a client that sees ERROR
    also sees why.
    """
    message = message_of(exc)
    try:
        with db.writer(context):
            instance_obj.save(db, context, instance_uuid, values)
            fault_obj.create(db, context, instance_uuid=instance_uuid, code=500,
                             message=message)
    except exception.InstanceNotFound:
        return
    if event is None or not context.request_id:
        return
    try:
        action_obj.event_start(db, context, instance_uuid, context.request_id, event)
        action_obj.event_finish(db, context, instance_uuid, context.request_id, event,
                                result="Error", traceback=traceback.format_exc(),
                                details=message)
    except exception.NotFound:
        pass
