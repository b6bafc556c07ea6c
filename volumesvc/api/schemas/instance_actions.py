"""Schemas of /servers/{id}/os-instance-actions, one constant per version range."""

import copy

from volumesvc.api.validation import multi_params, object_

# --- GET list query: nothing before 2.58 (ignored), then pagination ------------------
list_instance_actions_query_v2_1 = object_({})
list_instance_actions_query_v2_58 = object_({
    "limit": multi_params({"type": "string", "pattern": "^[0-9]+$"}),
    "marker": multi_params({"type": "string"}),
    "changes-since": multi_params({"type": "string", "format": "date-time"}),
})
# 2.66 adds changes-before.
list_instance_actions_query_v2_66 = copy.deepcopy(list_instance_actions_query_v2_58)
list_instance_actions_query_v2_66["properties"]["changes-before"] = multi_params(
    {"type": "string", "format": "date-time"})

# --- GET one query: nothing (2.102: unknown keys give 400) ---------------------------
show_instance_action_query_v2_1 = object_({})
show_instance_action_query_v2_102 = copy.deepcopy(show_instance_action_query_v2_1)

# --- representations -----------------------------------------------------------------
_str_or_null = {"type": ["string", "null"]}
_action_v2_1 = {
    "action": {"type": "string"},
    "instance_uuid": {"type": "string"},
    "request_id": {"type": "string"},
    "user_id": _str_or_null,
    "project_id": _str_or_null,
    "start_time": {"type": "string"},
    "message": _str_or_null,
}
# 2.58 adds updated_at.
_action_v2_58 = dict(_action_v2_1, updated_at=_str_or_null)

_event_v2_1 = {
    "event": {"type": "string"},
    "start_time": _str_or_null,
    "finish_time": _str_or_null,
    "result": _str_or_null,
    # Admins only (policy).
    "traceback": _str_or_null,
}
# 2.62 adds hostId for everyone and host for admins.
_event_v2_62 = dict(_event_v2_1, hostId={"type": "string"}, host=_str_or_null)
# 2.84 adds details (policy).
_event_v2_84 = dict(_event_v2_62, details=_str_or_null)
_OPTIONAL = ("traceback", "host", "details")

_links = {"type": "array", "items": object_({
    "rel": {"type": "string"}, "href": {"type": "string"}}, required=["rel", "href"])}


def _list(action, links=False):
    props = {"instanceActions": {"type": "array",
                                 "items": object_(action, required=list(action))}}
    if links:
        props["links"] = _links
    return object_(props, required=["instanceActions"])


def _show(action, event):
    events = {"type": "array", "items": object_(
        event, required=[k for k in event if k not in _OPTIONAL])}
    return object_({"instanceAction": object_(dict(action, events=events),
                                              required=list(action))},
                   required=["instanceAction"])


list_instance_actions_response_v2_1 = _list(_action_v2_1)
list_instance_actions_response_v2_58 = _list(_action_v2_58, links=True)

show_instance_action_response_v2_1 = _show(_action_v2_1, _event_v2_1)
show_instance_action_response_v2_58 = _show(_action_v2_58, _event_v2_1)
show_instance_action_response_v2_62 = _show(_action_v2_58, _event_v2_62)
show_instance_action_response_v2_84 = _show(_action_v2_58, _event_v2_84)
