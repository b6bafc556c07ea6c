"""Instance actions and their events (``os-instance-actions``).

An action is one user request on an instance (keyed by request id); events
are the steps services record while carrying it out. A failed event marks
the action's message "Error", which is what users see in the action list.
"""

import dataclasses
import datetime

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base


@dataclasses.dataclass
class InstanceActionEvent(base.DictMixin):
    id: int | None = None
    event: str | None = None
    action_id: int | None = None
    start_time: datetime.datetime | None = None
    finish_time: datetime.datetime | None = None
    result: str | None = None
    traceback: str | None = None
    host: str | None = None
    details: str | None = None


@dataclasses.dataclass
class InstanceAction(base.DictMixin):
    id: int | None = None
    action: str | None = None
    instance_uuid: str | None = None
    request_id: str | None = None
    user_id: str | None = None
    project_id: str | None = None
    start_time: datetime.datetime | None = None
    finish_time: datetime.datetime | None = None
    message: str | None = None
    updated_at: datetime.datetime | None = None
    events: list[InstanceActionEvent] = dataclasses.field(default_factory=list)

    @classmethod
    def _field_from_dict(cls, name, value):
        if name == "events":
            return [InstanceActionEvent.from_dict(item) for item in value]
        return value


def _action_row(session, instance_uuid, request_id):
    model = models.InstanceAction
    statement = (sa.select(model)
                 .where(model.instance_uuid == instance_uuid, model.request_id == request_id)
                 .order_by(model.id.desc()))
    row = session.scalars(statement).first()
    if row is None:
        raise exception.InstanceActionNotFound(request_id=request_id,
                                               instance_uuid=instance_uuid)
    return row


def action_start(db, context, instance_uuid, action, request_id, user_id,
                 project_id, *, event=None, host=None) -> InstanceAction:
    """Record the action; ``event``: also start that event (on ``host``) in the same write.

    Why ``event``: a workflow that starts the action and hands the next step
    to a compute can start the compute's event here, one transaction and
    (for the compute) one RPC round trip less than ``event_start`` later.
    """
    with db.writer(context) as session:
        now = base.utcnow()
        row = models.InstanceAction(
            instance_uuid=instance_uuid, action=action, request_id=request_id,
            user_id=user_id, project_id=project_id, start_time=now)
        session.add(row)
        session.flush()
        events = []
        if event is not None:
            event_row = models.InstanceActionEvent(action_id=row.id, event=event, host=host,
                                                   start_time=now)
            session.add(event_row)
            session.flush()
            events.append(InstanceActionEvent.from_model(event_row))
        return InstanceAction.from_model(row, events=events)


def action_finish(db, context, instance_uuid, request_id) -> InstanceAction:
    with db.writer(context) as session:
        row = _action_row(session, instance_uuid, request_id)
        row.finish_time = base.utcnow()
        session.flush()
        return InstanceAction.from_model(row, events=[])


def event_start(db, context, instance_uuid, request_id, event, host=None) -> InstanceActionEvent:
    with db.writer(context) as session:
        action = _action_row(session, instance_uuid, request_id)
        row = models.InstanceActionEvent(action_id=action.id, event=event, host=host,
                                         start_time=base.utcnow())
        session.add(row)
        # NOTE: touching the action lets "changes-since" on the action list
        # see progress, as in Nova.
        action.updated_at = base.utcnow()
        session.flush()
        return InstanceActionEvent.from_model(row)


def event_finish(db, context, instance_uuid, request_id, event, result="Success",
                 traceback=None, details=None) -> InstanceActionEvent:
    """Finish the latest ``event`` of the action, and the action with it.

    NOTE: the action's finish_time follows its last finished event, so an
    action whose steps all ended reads as finished even if nobody called
    action_finish (Nova only bumps updated_at; we found the timestamp useful).
    """
    if result not in ("Success", "Error"):
        raise exception.Invalid(reason=f"event result must be Success or Error, not {result!r}")
    now = base.utcnow()
    with db.writer(context) as session:
        row, action = _latest_event(session, instance_uuid, request_id, event)
        row.finish_time = now
        row.result = result
        row.traceback = traceback
        row.details = details
        action.finish_time = now
        action.updated_at = now
        if result == "Error":
            action.message = "Error"
        session.flush()
        return InstanceActionEvent.from_model(row)


def event_finish_if_running(db, context, instance_uuid, request_id, event, result="Success",
                            traceback=None, details=None) -> bool:
    """``event_finish`` unless the event has ended already; whether this call ended it.

    Why: two processes may end one event, the one that ran the step and a
    conductor that took it for dead (``conductor/image_requests.py``). The
    finish is a compare and swap on the unfinished row, so exactly one of
    them decides the outcome and the other learns it lost.
    """
    if result not in ("Success", "Error"):
        raise exception.Invalid(reason=f"event result must be Success or Error, not {result!r}")
    now = base.utcnow()
    model = models.InstanceActionEvent
    with db.writer(context) as session:
        row, action = _latest_event(session, instance_uuid, request_id, event)
        ended = session.execute(
            sa.update(model).where(model.id == row.id, model.finish_time.is_(None))
            .values(finish_time=now, result=result, traceback=traceback, details=details)
            .execution_options(synchronize_session=False)).rowcount
        if not ended:
            return False
        action.finish_time = now
        action.updated_at = now
        if result == "Error":
            action.message = "Error"
        session.flush()
        return True


@dataclasses.dataclass(frozen=True)
class RunningEvent:
    """An unfinished event with what names its action (``list_running_events``)."""

    instance_uuid: str
    request_id: str
    start_time: datetime.datetime


def list_running_events(db, context, event, *, started_before, limit) -> list[RunningEvent]:
    """Unfinished ``event`` rows started before ``started_before``, oldest first.

    What a process that died in the step left: nobody else would ever end
    them.
    """
    model, action_model = models.InstanceActionEvent, models.InstanceAction
    statement = (sa.select(action_model.instance_uuid, action_model.request_id,
                           model.start_time)
                 .join(action_model, model.action_id == action_model.id)
                 .where(model.event == event, model.finish_time.is_(None),
                        model.start_time < started_before)
                 .order_by(model.start_time, model.id).limit(limit))
    with db.reader(context) as session:
        return [RunningEvent(instance_uuid, request_id, start_time)
                for instance_uuid, request_id, start_time in session.execute(statement)]


def find_event(db, context, instance_uuid, request_id, event) -> InstanceActionEvent | None:
    """The latest ``event`` of the action of ``request_id``; None when there is none."""
    with db.reader(context) as session:
        try:
            row, _ = _latest_event(session, instance_uuid, request_id, event)
        except exception.NotFound:
            return None
        return InstanceActionEvent.from_model(row)


def _latest_event(session, instance_uuid, request_id, event):
    """The latest ``event`` of the latest action of ``request_id``, with that action.

    One SELECT for both rows (every attach finishes an event); when either is
    missing, the two lookups again to raise the precise NotFound.
    """
    model, action_model = models.InstanceActionEvent, models.InstanceAction
    latest = (sa.select(sa.func.max(action_model.id))
              .where(action_model.instance_uuid == instance_uuid,
                     action_model.request_id == request_id)
              .scalar_subquery())
    found = session.execute(
        sa.select(model, action_model).join(action_model, model.action_id == action_model.id)
        .where(action_model.id == latest, model.event == event)
        .order_by(model.id.desc()).limit(1)).first()
    if found is not None:
        return found[0], found[1]
    action = _action_row(session, instance_uuid, request_id)
    raise exception.InstanceActionEventNotFound(event=event, action_id=action.id)


def list_actions(db, context, instance_uuid) -> list[InstanceAction]:
    """Actions of an instance, newest first, without their events (as the API lists them)."""
    model = models.InstanceAction
    statement = (sa.select(model).where(model.instance_uuid == instance_uuid)
                 .order_by(model.created_at.desc(), model.id.desc()))
    with db.reader(context) as session:
        return [InstanceAction.from_model(row, events=[]) for row in session.scalars(statement)]


def get_action(db, context, instance_uuid, request_id) -> InstanceAction:
    """One action with its events, oldest event first."""
    model = models.InstanceActionEvent
    with db.reader(context) as session:
        action = _action_row(session, instance_uuid, request_id)
        events = session.scalars(
            sa.select(model).where(model.action_id == action.id).order_by(model.id))
        return InstanceAction.from_model(
            action, events=[InstanceActionEvent.from_model(row) for row in events])
