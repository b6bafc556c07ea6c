"""The instance action and action event representations per microversion.

Action: 2.58 adds ``updated_at``; the ``show`` view carries the events
(when the caller may see them). Event: ``traceback`` for readers of all
events (admins), 2.62 ``hostId`` for everyone and ``host`` for admins,
2.84 ``details`` when its policy allows. Who may see what is decided by the
handler and passed in as render context.
"""

import hashlib

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr

SHOW = "show"
_STR = {"type": "string"}
_NULLABLE_STR = {"type": ["string", "null"]}


def _time(value):
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def updated_at(action):
    # NOTE: Nova stamps updated_at when the action starts; ours is only set
    # once an event touches the action, so fall back to the start time.
    return action.updated_at or action.start_time


def _host_id(project_id, host) -> str:
    if not host:
        return ""
    return hashlib.sha224(f"{project_id}{host}".encode()).hexdigest()


EVENT = Representation("instance_action_event", (
    Field("event", _STR, attr("event")),
    Field("start_time", _NULLABLE_STR, lambda e, ctx: _time(e.start_time)),
    Field("finish_time", _NULLABLE_STR, lambda e, ctx: _time(e.finish_time)),
    Field("result", _NULLABLE_STR, attr("result")),
    Field("traceback", _NULLABLE_STR, attr("traceback"), when=lambda e, ctx: ctx.see_all),
    Field("host", _NULLABLE_STR, attr("host"), first=mv.V2_62_ACTION_EVENT_HOST,
          when=lambda e, ctx: ctx.see_all),
    # NOTE: actions recorded by periodic tasks have no project; the hostId
    # is then built with the server's project, as in Nova.
    Field("hostId", _STR, lambda e, ctx: _host_id(ctx.project_id, e.host),
          first=mv.V2_62_ACTION_EVENT_HOST),
    Field("details", _NULLABLE_STR, attr("details"), first=mv.V2_84_EVENT_DETAILS,
          when=lambda e, ctx: ctx.details),
))

ACTION = Representation("instance_action", (
    Field("action", _STR, attr("action")),
    Field("instance_uuid", _STR, attr("instance_uuid")),
    Field("request_id", _STR, attr("request_id")),
    Field("user_id", _NULLABLE_STR, attr("user_id")),
    Field("project_id", _NULLABLE_STR, attr("project_id")),
    Field("start_time", _STR, lambda a, ctx: _time(a.start_time)),
    Field("message", _NULLABLE_STR, attr("message")),
    Field("updated_at", _NULLABLE_STR, lambda a, ctx: _time(updated_at(a)),
          first=mv.V2_58_ACTION_PAGING),
    # Only when the caller may see events (``events`` is None otherwise).
    Field("events", None, lambda a, ctx: ctx.events, views=(SHOW,), items=EVENT,
          when=lambda a, ctx: ctx.events is not None),
))


def action(req, row) -> dict:
    return ACTION.render(req.version, row)


def action_with_events(req, row, *, events, project_id, see_all, details) -> dict:
    """``events``: the rows to show, or None when the caller may not see them."""
    return ACTION.render(req.version, row, view=SHOW, events=events, project_id=project_id,
                         see_all=see_all, details=details)
