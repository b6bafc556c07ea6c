"""Schemas of POST /servers/{id}/action: one top-level key names the action.

The body schema validates the actions we serve and lets any other single
key through, so the handler can answer Nova's ``There is no such action``
(or say that a known Nova action is not served) instead of a schema error.
"""

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import object_

reboot = object_({
    "type": {"type": "string", "enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"]},
}, required=["type"])

create_image = object_({
    "name": parameter_types.NAME,
    "metadata": parameter_types.METADATA,
}, required=["name"])

# os-stop, os-start, shelve, shelveOffload: Nova reads nothing from these
# bodies. Its documented body is ``null``, but clients send ``{}`` as well
# (tempest's servers client does), and Nova takes both; an object with
# members is still refused, as no option of these actions exists.
_no_body = {"type": ["null", "object"], "additionalProperties": False}
# unshelve below 2.77: Nova reads nothing from the body (null or an object).
unshelve_v2_1 = {"type": ["null", "object"]}
# 2.77: an availability zone to unshelve an offloaded server into.
unshelve_v2_77 = {"oneOf": [
    {"type": "null"},
    object_({"availability_zone": {"type": "string", "minLength": 1, "maxLength": 255}},
            required=["availability_zone"]),
]}
# 2.91: a host (admin), and availability_zone null means "any zone".
unshelve_v2_91 = {"oneOf": [
    {"type": "null"},
    object_({"availability_zone": {"oneOf": [
                {"type": "null"}, {"type": "string", "minLength": 1, "maxLength": 255}]},
             "host": {"type": "string", "minLength": 1, "maxLength": 255,
                      "pattern": r"^[a-zA-Z0-9-._]*$"}},
            minProperties=1),
]}


def _actions(unshelve):
    return {
        "type": "object",
        "properties": {"reboot": reboot, "createImage": create_image, "os-stop": _no_body,
                       "os-start": _no_body, "shelve": _no_body, "shelveOffload": _no_body,
                       "unshelve": unshelve},
        # Any other single key reaches the handler (400 with a clear message).
        "patternProperties": {"^.*$": {}},
        "minProperties": 1,
        "maxProperties": 1,
    }


server_action_v2_1 = _actions(unshelve_v2_1)
server_action_v2_77 = _actions(unshelve_v2_77)
server_action_v2_91 = _actions(unshelve_v2_91)
REQUEST_WINDOWS = ((mv.V2_1_BASE, server_action_v2_1),
                   (mv.V2_77_UNSHELVE_AZ, server_action_v2_77),
                   (mv.V2_91_UNSHELVE_HOST, server_action_v2_91))

# --- responses -------------------------------------------------------------------
# 2.1-2.44: 202 with no body (createImage sends a Location header).
server_action_response_v2_1 = None
# 2.45: createImage answers {"image_id": ...}; reboot still has no body.
server_action_response_v2_45 = {"oneOf": [
    {"type": "null"},
    object_({"image_id": {"type": "string", "format": "uuid"}}, required=["image_id"]),
]}
