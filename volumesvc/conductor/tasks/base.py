"""Conductor tasks: one multi-step workflow per class, with its undo."""

import dataclasses
import traceback
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_utils import excutils

from volumesvc import exception
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import instance_fault as fault_obj

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TaskDeps:
    """The conductor's clients every task is built with (the manager holds one).

    One object instead of four to six positional parameters per task: a task's
    own parameters are then only its request's fields.
    ``up_cache``: the conductor's shared answers to "is this compute up?";
    ``watch``: ``attach_watch.AttachWatch``, which casts again an attach that
    did not arrive.
    """

    conf: Any
    db: Any
    compute: Any
    cinder: Any = None
    up_cache: Any = None
    watch: Any = None


class TaskBase:
    """``execute()`` runs ``_execute()``; on any failure ``rollback()`` runs first.

    Every task is built as ``Task(deps, context, instance_uuid=..., <its
    request's fields>)``. Subclasses record what they made as they go so
    ``rollback`` undoes exactly that (no half-made attachments, no lost
    records). What another module needs of a task is a public method of it.
    """

    def __init__(self, deps, context, *, instance_uuid):
        self.deps = deps
        self.conf = deps.conf
        self.db = deps.db
        self.compute = deps.compute
        self.cinder = deps.cinder
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

    def answers(self, host) -> bool:
        """Does the compute of ``host`` answer a ping within ``[compute] host_probe_timeout``?

        Asked of a compute that looks down (no recent heartbeat) before work
        is refused for it: computes heartbeat through the conductor, and a
        busy host or a conductor outage can make a live one look down.
        """
        try:
            self.compute.ping(self.context, host=host,
                              timeout=self.conf.compute.host_probe_timeout)
        except messaging.MessagingTimeout:
            return False
        return True

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
