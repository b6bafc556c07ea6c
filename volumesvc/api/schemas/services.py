"""Schemas of /os-services, one constant per version range that changed."""

import copy

from volumesvc.api import microversions as mv
from volumesvc.api.validation import multi_params, object_

# --- GET /os-services query --------------------------------------------------
list_services_query_v2_1 = object_({
    "host": multi_params({"type": "string"}),
    "binary": multi_params({"type": "string"}),
})


# --- service representation: rows in views/services.py, envelopes here ------
def list_services_response(service, version=None):
    return object_({"services": {"type": "array", "items": service}}, required=["services"])


def update_service_response(service, version=None):
    """PUT /os-services/{uuid} (2.53+): the full service."""
    return object_({"service": service}, required=["service"])


# --- PUT /os-services/{action} (2.1 - 2.52, by host and binary) -----------------
_reason = {"type": "string", "minLength": 1, "maxLength": 255}
update_service_v2_1 = object_({
    "host": {"type": "string", "minLength": 1, "maxLength": 255},
    "binary": {"type": "string", "minLength": 1, "maxLength": 255},
    "disabled_reason": _reason,
}, required=["host", "binary"])
# 2.11: the force-down action takes forced_down.
update_service_v2_11 = copy.deepcopy(update_service_v2_1)
update_service_v2_11["properties"]["forced_down"] = {"type": "boolean"}
UPDATE_BY_HOST_WINDOWS = ((mv.V2_1_BASE, update_service_v2_1),
                          (mv.V2_11_FORCED_DOWN, update_service_v2_11))

update_service_response_v2_1 = object_({"service": object_({
    "host": {"type": "string"},
    "binary": {"type": "string"},
    "status": {"type": "string", "enum": ["enabled", "disabled"]},
    "disabled_reason": {"type": "string"},
}, required=["host", "binary", "status"])}, required=["service"])
update_service_response_v2_11 = {"oneOf": [update_service_response_v2_1, object_({
    "service": object_({
        "host": {"type": "string"},
        "binary": {"type": "string"},
        "forced_down": {"type": "boolean"},
    }, required=["host", "binary", "forced_down"])}, required=["service"])]}
UPDATE_BY_HOST_RESPONSE_WINDOWS = ((mv.V2_1_BASE, update_service_response_v2_1),
                                   (mv.V2_11_FORCED_DOWN, update_service_response_v2_11))

# --- PUT /os-services/{uuid} (2.53+) -----------------------------------------
update_service_v2_53 = object_({
    "status": {"type": "string", "enum": ["enabled", "disabled"]},
    "disabled_reason": _reason,
    "forced_down": {"type": "boolean"},
})
# --- DELETE: no body in the response ----------------------------------------------
delete_service_response_v2_1 = None
