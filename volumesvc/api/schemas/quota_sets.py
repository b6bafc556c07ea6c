"""Schemas of /os-quota-sets and /limits, one constant per version range that changed.

The quota set body takes the resources shown at that version (2.36 drops
the network quotas, 2.57 the injected-file ones: a key not shown is a
400) and ``force`` (set a limit below the current usage).
"""

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import MAX_INT, multi_params, object_
from volumesvc.api.views import quota_sets as views

_LIMIT = {"type": ["integer", "string"], "pattern": "^-?[0-9]+$", "minimum": -1,
          "maximum": MAX_INT, "minLength": 1}
_VERSIONS = (mv.V2_1_BASE, mv.V2_36_NO_PROXY_APIS, mv.V2_57_REBUILD_USER_DATA)


def _update(version):
    properties = {name: _LIMIT for name in views.resources_at(version)}
    properties["force"] = parameter_types.BOOL_LIKE
    return object_({"quota_set": object_(properties)}, required=["quota_set"])


UPDATE_WINDOWS = tuple((version, _update(version)) for version in _VERSIONS)

# --- queries: user_id on show, detail, update and delete -----------------------------
_USER = {"user_id": multi_params({"type": "string"})}
user_query_v2_1 = object_(dict(_USER))
defaults_query_v2_1 = object_({})
limits_query_v2_1 = object_({"tenant_id": multi_params({"type": "string"}),
                             # Any string, as Nova (openstacksdk sends reserved=False).
                             "reserved": multi_params({"type": "string"})})


# --- representations: rows in views/quota_sets.py, envelopes here ---------------------
def one(quota_set, version=None):
    return object_({"quota_set": quota_set}, required=["quota_set"])


def limits(absolute, version=None):
    return object_({"limits": object_({"rate": {"type": "array", "maxItems": 0},
                                       "absolute": absolute},
                                      required=["rate", "absolute"])}, required=["limits"])


delete_response_v2_1 = None
