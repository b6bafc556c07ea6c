"""Schemas of /os-availability-zone: no query, Nova's availabilityZoneInfo bodies."""

from volumesvc.api.validation import object_

list_query_v2_1 = object_({})

_STATE = object_({"available": {"type": "boolean"}}, required=["available"])
_SERVICE = object_({"available": {"type": "boolean"}, "active": {"type": "boolean"},
                    "updated_at": {"type": ["string", "null"]}},
                   required=["available", "active", "updated_at"])
_HOST = {"type": "object", "additionalProperties": False,
         "patternProperties": {"^.+$": _SERVICE}}
_HOSTS = {"type": "object", "additionalProperties": False,
          "patternProperties": {"^.+$": _HOST}}


def _response(hosts):
    zone = object_({"zoneName": {"type": "string"}, "zoneState": _STATE, "hosts": hosts},
                   required=["zoneName", "zoneState", "hosts"])
    return object_({"availabilityZoneInfo": {"type": "array", "items": zone}},
                   required=["availabilityZoneInfo"])


list_response_v2_1 = _response({"type": "null"})
detail_response_v2_1 = _response(_HOSTS)
