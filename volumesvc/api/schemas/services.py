"""Schemas of /os-services, one constant per version range that changed."""

import copy

from volumesvc.api.validation import multi_params, object_

# --- GET /os-services query --------------------------------------------------
list_services_query_v2_1 = object_({
    "host": multi_params({"type": "string"}),
    "binary": multi_params({"type": "string"}),
})
# 2.75: same keys, but unknown ones now give 400 (the handler declares the
# range without strip_unknown).
list_services_query_v2_75 = copy.deepcopy(list_services_query_v2_1)

# --- service representation ---------------------------------------------------
_service_v2_1 = {
    "id": {"type": "integer"},
    "binary": {"type": "string"},
    "host": {"type": "string"},
    "zone": {"type": "string"},
    "status": {"type": "string", "enum": ["enabled", "disabled"]},
    "state": {"type": "string", "enum": ["up", "down"]},
    "updated_at": {"type": ["string", "null"]},
    "disabled_reason": {"type": ["string", "null"]},
}
# 2.11 adds forced_down.
_service_v2_11 = dict(_service_v2_1, forced_down={"type": "boolean"})
# 2.53 identifies services by uuid.
_service_v2_53 = dict(_service_v2_11, id={"type": "string", "format": "uuid"})


def _list(service):
    return object_({"services": {"type": "array", "items": object_(
        service, required=list(service))}}, required=["services"])


list_services_response_v2_1 = _list(_service_v2_1)
list_services_response_v2_11 = _list(_service_v2_11)
list_services_response_v2_53 = _list(_service_v2_53)

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

# --- PUT /os-services/{uuid} (2.53+) -----------------------------------------
update_service_v2_53 = object_({
    "status": {"type": "string", "enum": ["enabled", "disabled"]},
    "disabled_reason": _reason,
    "forced_down": {"type": "boolean"},
})
update_service_response_v2_53 = object_(
    {"service": object_(_service_v2_53, required=list(_service_v2_53))},
    required=["service"])

# --- DELETE: no body in the response ----------------------------------------------
delete_service_response_v2_1 = None
