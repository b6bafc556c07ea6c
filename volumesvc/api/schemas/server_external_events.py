"""Schemas of POST /os-server-external-events, one constant per version range.

Only the allowed event names change with the version (doc/source/contributor/contract.rst §7); a
name the version does not allow fails the whole request with 400. 2.105
changes what ``volume-extended`` does, not what it looks like.
"""

import copy

from volumesvc.api import microversions as mv
from volumesvc.api.validation import object_

NETWORK_EVENTS = ["network-changed", "network-vif-plugged", "network-vif-unplugged",
                  "network-vif-deleted"]
STATUSES = ["failed", "completed", "in-progress"]


def _request(names):
    event = object_({
        "name": {"type": "string", "enum": list(names)},
        "server_uuid": {"type": "string", "format": "uuid"},
        "status": {"type": "string", "enum": STATUSES},
        "tag": {"type": "string", "maxLength": 255},
    }, required=["name", "server_uuid"])
    return object_({"events": {"type": "array", "minItems": 1, "items": event}},
                   required=["events"])


def _names(schema_):
    return schema_["properties"]["events"]["items"]["properties"]["name"]["enum"]


def _adding(previous, name):
    schema_ = copy.deepcopy(previous)
    _names(schema_).append(name)
    return schema_


create_server_external_events_v2_1 = _request(NETWORK_EVENTS)
# 2.51 adds volume-extended (tag: the volume id).
create_server_external_events_v2_51 = _adding(create_server_external_events_v2_1,
                                              "volume-extended")
# 2.76 adds power-update (tag: POWER_ON or POWER_OFF).
create_server_external_events_v2_76 = _adding(create_server_external_events_v2_51,
                                              "power-update")
# 2.82 adds accelerator-request-bound (tag: the ARQ uuid).
create_server_external_events_v2_82 = _adding(create_server_external_events_v2_76,
                                              "accelerator-request-bound")
# 2.93 adds volume-reimaged (tag: the volume id).
create_server_external_events_v2_93 = _adding(create_server_external_events_v2_82,
                                              "volume-reimaged")

# 2.105 (volumesvc): the same body; a volume-extended event for a volume Cinder
# left ``extending`` now completes the extend (os-extend_volume_completion).
create_server_external_events_v2_105 = copy.deepcopy(create_server_external_events_v2_93)

REQUEST_WINDOWS = (
    (mv.V2_1_BASE, create_server_external_events_v2_1),
    (mv.V2_51_VOLUME_EXTENDED, create_server_external_events_v2_51),
    (mv.V2_76_POWER_UPDATE, create_server_external_events_v2_76),
    (mv.V2_82_ACCELERATOR_EVENT, create_server_external_events_v2_82),
    (mv.V2_93_VOLUME_REBUILD, create_server_external_events_v2_93),
    (mv.V2_105_EXTEND_COMPLETION, create_server_external_events_v2_105),
)

# --- response: the request's events, each with code and status ------------------------
create_server_external_events_response_v2_1 = object_({"events": {
    "type": "array", "minItems": 1, "items": object_({
        "name": {"type": "string"},
        "server_uuid": {"type": "string"},
        "status": {"type": "string", "enum": ["failed", "completed"]},
        "tag": {"type": "string"},
        "code": {"type": "integer", "enum": [200, 400, 404, 422]},
    }, required=["name", "server_uuid", "status", "code"])}}, required=["events"])
