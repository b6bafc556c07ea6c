"""Schemas of /flavors, one constant per version range that changed."""

import copy

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import MAX_INT, multi_params, object_

# --- GET /flavors and /flavors/detail query -------------------------------------------
VALID_SORT_KEYS = ["created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id",
                   "is_public", "memory_mb", "name", "root_gb", "rxtx_factor", "swap",
                   "updated_at", "vcpu_weight", "vcpus"]
list_flavors_query_v2_1 = object_({
    "limit": multi_params(parameter_types.QUERY_NON_NEGATIVE_INT),
    "marker": multi_params({"type": "string"}),
    "is_public": multi_params({"type": "string"}),
    "minRam": multi_params({"type": "string"}),
    "minDisk": multi_params({"type": "string"}),
    "sort_key": multi_params({"type": "string", "enum": VALID_SORT_KEYS}),
    "sort_dir": multi_params({"type": "string", "enum": ["asc", "desc"]}),
})

# --- GET /flavors/{id} query: nothing ------------------------------------------------
show_flavor_query_v2_1 = object_({})

# --- representations: rows in views/flavors.py, envelopes here -----------------------
EXTRA_SPECS = {"type": "object", "patternProperties": {"^.+$": {"type": "string"}},
               "additionalProperties": False}


def one(flavor, version=None):
    return object_({"flavor": flavor}, required=["flavor"])


def many(flavor, version=None):
    return object_({"flavors": {"type": "array", "items": flavor},
                    "flavors_links": parameter_types.LINKS}, required=["flavors"])


# --- POST /flavors (admin) ---------------------------------------------------------
# The largest single-precision float (Nova's bound for rxtx_factor).
MAX_RXTX_FACTOR = 3.40282e+38
_positive = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 1,
             "maximum": MAX_INT, "minLength": 1}
_non_negative = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 0,
                 "maximum": MAX_INT, "minLength": 1}
create_flavor_v2_1 = object_({"flavor": object_({
    "name": parameter_types.NAME,
    # Leading/trailing whitespace is forbidden; null or absent → a generated uuid.
    "id": {"type": ["string", "number", "null"], "minLength": 1, "maxLength": 255,
           "pattern": r"^(?! )[a-zA-Z0-9. _-]+(?<! )$"},
    "ram": _positive,
    "vcpus": _positive,
    "disk": _non_negative,
    "OS-FLV-EXT-DATA:ephemeral": _non_negative,
    "swap": _non_negative,
    "rxtx_factor": {"type": ["number", "string"], "pattern": r"^[0-9]+(\.[0-9]+)?$",
                    "exclusiveMinimum": 0, "maximum": MAX_RXTX_FACTOR},
    "os-flavor-access:is_public": parameter_types.BOOL_LIKE,
}, required=["name", "ram", "vcpus", "disk"])}, required=["flavor"])
# 2.55 adds description.
create_flavor_v2_55 = copy.deepcopy(create_flavor_v2_1)
create_flavor_v2_55["properties"]["flavor"]["properties"]["description"] = {
    "type": ["string", "null"], "maxLength": 65535}
CREATE_WINDOWS = ((mv.V2_1_BASE, create_flavor_v2_1),
                  (mv.V2_55_FLAVOR_DESCRIPTION, create_flavor_v2_55))

# --- DELETE: 202, no body -------------------------------------------------------------
delete_flavor_response_v2_1 = None


# GET /flavors/{id}/os-extra_specs (and one key): the sdk and OSC read it for
# every flavor whose inline extra_specs are empty.
list_flavor_extra_specs_query_v2_1 = object_({})
list_flavor_extra_specs_response_v2_1 = object_({"extra_specs": EXTRA_SPECS},
                                                required=["extra_specs"])
show_flavor_extra_spec_response_v2_1 = {
    "type": "object", "minProperties": 1, "maxProperties": 1,
    "patternProperties": {"^.+$": {"type": "string"}}, "additionalProperties": False}
