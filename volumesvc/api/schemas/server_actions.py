"""Schemas of POST /servers/{id}/action: one top-level key names the action.

The body schema validates the actions we serve and lets any other single
key through, so the handler can answer Nova's ``There is no such action``
(or say that a known Nova action is not served) instead of a schema error.
"""

from volumesvc.api.validation import object_

# Nova's parameter_types.name: 1-255 chars, no leading/trailing whitespace.
_name = {"type": "string", "minLength": 1, "maxLength": 255,
         "pattern": r"^(?!\s)[\s\S]*(?<!\s)$"}

reboot = object_({
    "type": {"type": "string", "enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"]},
}, required=["type"])

create_image = object_({
    "name": _name,
    # Nova's image_metadata: string values, keys of 1-255 safe characters.
    "metadata": {
        "type": "object",
        "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string",
                                                            "maxLength": 255}},
        "additionalProperties": False,
    },
}, required=["name"])

# os-stop, os-start, shelve, shelveOffload: Nova's bodies are ``null``.
_no_body = {"type": "null"}
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

# --- responses -------------------------------------------------------------------
# 2.1-2.44: 202 with no body (createImage sends a Location header).
server_action_response_v2_1 = None
# 2.45: createImage answers {"image_id": ...}; reboot still has no body.
server_action_response_v2_45 = {"oneOf": [
    {"type": "null"},
    object_({"image_id": {"type": "string", "format": "uuid"}}, required=["image_id"]),
]}
