"""Schemas of POST /servers/{id}/action: one top-level key names the action.

The body schema validates the actions we serve and lets any other single
key through, so the handler can answer Nova's ``There is no such action``
(or say that a known Nova action is not served) instead of a schema error.
"""

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types, server_evacuate
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


# rebuild (volume-backed servers): Nova's body per version. 2.19 adds
# description, 2.54 key_name (null removes it), 2.57 user_data (null removes
# it) and drops personality, 2.63 trusted_image_certificates, 2.90 hostname,
# 2.94 a fully qualified hostname.
_TRUSTED_CERTS = {"type": ["array", "null"], "minItems": 1, "maxItems": 50,
                  "uniqueItems": True, "items": {"type": "string", "minLength": 1}}
_PERSONALITY = {"type": "array", "items": object_({
    "path": {"type": "string"}, "contents": {"type": "string", "format": "base64"}})}


def _rebuild(version):
    body = {
        "name": parameter_types.SERVER_NAME,
        "imageRef": parameter_types.UUID,
        "adminPass": {"type": "string"},
        "metadata": parameter_types.METADATA,
        "preserve_ephemeral": parameter_types.BOOL_LIKE,
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
        "accessIPv4": {"type": "string", "format": "ipv4"},
        "accessIPv6": {"type": "string", "format": "ipv6"},
        "personality": _PERSONALITY,
    }
    if version >= mv.V2_19_DESCRIPTION:
        body["description"] = {"type": ["string", "null"], "maxLength": 255}
    if version >= mv.V2_54_REBUILD_KEY_NAME:
        body["key_name"] = {"type": ["string", "null"], "minLength": 1, "maxLength": 255}
    if version >= mv.V2_57_REBUILD_USER_DATA:
        del body["personality"]
        body["user_data"] = {"type": ["string", "null"], "format": "base64",
                             "maxLength": 65535}
    if version >= mv.V2_63_TRUSTED_CERTS:
        body["trusted_image_certificates"] = _TRUSTED_CERTS
    if version >= mv.V2_90_HOSTNAME:
        body["hostname"] = (parameter_types.FQDN_HOSTNAME if version >= mv.V2_94_FQDN_HOSTNAME
                            else parameter_types.HOSTNAME)
    return object_(body, required=["imageRef"])


def _unshelve(version):
    if version >= mv.V2_91_UNSHELVE_HOST:
        return unshelve_v2_91
    return unshelve_v2_77 if version >= mv.V2_77_UNSHELVE_AZ else unshelve_v2_1


def _actions(version):
    return {
        "type": "object",
        "properties": {"reboot": reboot, "createImage": create_image, "os-stop": _no_body,
                       "os-start": _no_body, "shelve": _no_body, "shelveOffload": _no_body,
                       "unshelve": _unshelve(version), "rebuild": _rebuild(version)},
        # Any other single key reaches the handler (400 with a clear message).
        "patternProperties": {"^.*$": {}},
        "minProperties": 1,
        "maxProperties": 1,
    }


_WINDOW_STARTS = (mv.V2_1_BASE, mv.V2_19_DESCRIPTION, mv.V2_54_REBUILD_KEY_NAME,
                  mv.V2_57_REBUILD_USER_DATA, mv.V2_63_TRUSTED_CERTS, mv.V2_77_UNSHELVE_AZ,
                  mv.V2_90_HOSTNAME, mv.V2_91_UNSHELVE_HOST, mv.V2_94_FQDN_HOSTNAME)
REQUEST_WINDOWS = tuple((version, _actions(version)) for version in _WINDOW_STARTS)

# --- responses -------------------------------------------------------------------
# 202 with no body (createImage before 2.45 sends a Location header), or a body;
# 200 with the console output.


# os-getConsoleOutput's 200.
_CONSOLE_OUTPUT = object_({"output": {"type": "string"}}, required=["output"])


def response_windows(rebuild_windows):
    """``[(version, schema)]`` of every action's answer: no body, createImage's
    ``image_id`` (2.45), the rebuilt server (``rebuild_windows``: the
    server object's schema per version, from the server views) or the
    console output, or evacuate's ``adminPass`` (below 2.14).
    """
    starts = sorted({v for v, _ in rebuild_windows}
                    | {mv.V2_14_EVACUATE_SHARED, mv.V2_45_IMAGE_ID_BODY})
    windows = []
    for version in starts:
        server = [s for v, s in rebuild_windows if v <= version][-1]
        branches = [{"type": "null"},
                    object_({"server": server}, required=["server"])]
        if version >= mv.V2_45_IMAGE_ID_BODY:
            branches.append(object_({"image_id": {"type": "string", "format": "uuid"}},
                                    required=["image_id"]))
        branches.append(_CONSOLE_OUTPUT)
        if version < mv.V2_14_EVACUATE_SHARED:
            branches.append(server_evacuate.response_v2_1)
        windows.append((version, {"oneOf": branches}))
    return windows
