"""Schemas of /servers/{id}/os-instance-actions, one constant per version range."""

import copy

from volumesvc.api import microversions as mv
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

# --- representations: rows in views/instance_actions.py, envelopes here --------------
_links = {"type": "array", "items": object_({
    "rel": {"type": "string"}, "href": {"type": "string"}}, required=["rel", "href"])}


def list_instance_actions_response(action, version):
    """2.58 adds the pagination ``links``."""
    props = {"instanceActions": {"type": "array", "items": action}}
    if version >= mv.V2_58_ACTION_PAGING:
        props["links"] = _links
    return object_(props, required=["instanceActions"])


def show_instance_action_response(action, version=None):
    return object_({"instanceAction": action}, required=["instanceAction"])
