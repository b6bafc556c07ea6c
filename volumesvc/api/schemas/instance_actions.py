"""Schemas of /servers/{id}/os-instance-actions, one constant per version range."""

import copy

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import multi_params, object_

# --- GET list query: nothing before 2.58, then pagination (Nova's 2.58 schema is ----
# strict: an unknown key is a 400 from 2.58 on) ----------------------------------------
list_instance_actions_query_v2_1 = object_({})
list_instance_actions_query_v2_58 = object_({
    "limit": multi_params(parameter_types.QUERY_NON_NEGATIVE_INT),
    "marker": multi_params({"type": "string"}),
    "changes-since": multi_params({"type": "string", "format": "date-time"}),
})
# 2.66 adds changes-before.
list_instance_actions_query_v2_66 = copy.deepcopy(list_instance_actions_query_v2_58)
list_instance_actions_query_v2_66["properties"]["changes-before"] = multi_params(
    {"type": "string", "format": "date-time"})
LIST_QUERY_WINDOWS = ((mv.V2_1_BASE, list_instance_actions_query_v2_1),
                      (mv.V2_58_ACTION_PAGING, list_instance_actions_query_v2_58),
                      (mv.V2_66_CHANGES_BEFORE, list_instance_actions_query_v2_66))

# --- GET one query: nothing ----------------------------------------------------------
show_instance_action_query_v2_1 = object_({})

# --- representations: rows in views/instance_actions.py, envelopes here --------------


def list_instance_actions_response(action, version):
    """2.58 adds the pagination ``links``."""
    props = {"instanceActions": {"type": "array", "items": action}}
    if version >= mv.V2_58_ACTION_PAGING:
        props["links"] = parameter_types.LINKS
    return object_(props, required=["instanceActions"])


def show_instance_action_response(action, version=None):
    return object_({"instanceAction": action}, required=["instanceAction"])
