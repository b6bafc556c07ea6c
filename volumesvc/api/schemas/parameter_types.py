"""JSON-schema types that several request and response schemas share.

Nova keeps these in its ``parameter_types``; one copy here means a fix to,
say, what a tag may hold applies to every route that takes one.
"""

from volumesvc.api.validation import object_

# The spellings of true and false Nova's bool_from_string accepts.
BOOL_LIKE = {"type": ["boolean", "string"], "enum": [
    True, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes", "y", "t",
    False, "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no", "n", "f"]}
UUID = {"type": "string", "format": "uuid"}
# Device and server tags.
TAG = {"type": "string", "minLength": 1, "maxLength": 60, "pattern": "^[^,/]*$"}
# A name of 1-255 characters without leading or trailing whitespace
# (flavors, images).
NAME = {"type": "string", "minLength": 1, "maxLength": 255,
        "pattern": r"^(?!\s)[\s\S]*(?<!\s)$"}
# A server name: no leading or trailing space, no control character.
SERVER_NAME = {"type": "string", "minLength": 1, "maxLength": 255,
               "pattern": r"^(?! )[^\x00-\x1f]*(?<! )$"}
# Any 1-255 characters (availability zones, key names).
NAME_255 = {"type": "string", "minLength": 1, "maxLength": 255}
# A compute host or hypervisor name (2.74 boot to a host).
HOST_NAME = {"type": "string", "minLength": 1, "maxLength": 255,
             "pattern": "^[a-zA-Z0-9-._]*$"}
# A positive integer, or its decimal string form.
POSITIVE_INT = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 1,
                "minLength": 1}
# A non-negative integer in a query string (limit, offset); bounded by
# validation.bounded_int where it is read.
QUERY_NON_NEGATIVE_INT = {"type": "string", "pattern": "^[0-9]+$"}
# A server's hostname (2.90): letters, digits, ``-``, ``.`` and ``_``, starting and
# ending with a letter or digit, at most 63 characters.
_HOSTNAME_PATTERN = "^[a-zA-Z0-9]+[a-zA-Z0-9._-]*[a-zA-Z0-9]+$"
HOSTNAME = {"type": "string", "minLength": 2, "maxLength": 63, "pattern": _HOSTNAME_PATTERN}
# 2.94: a fully qualified domain name is accepted: the same characters, up to
# 255 of them (the dots separate its labels).
FQDN_HOSTNAME = {"type": "string", "minLength": 2, "maxLength": 255,
                 "pattern": _HOSTNAME_PATTERN}
# Server and image metadata: string values under keys of 1-255 safe characters.
METADATA = {"type": "object", "additionalProperties": False, "patternProperties": {
    "^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}}}
# Pagination links of a collection (``servers_links``, ``flavors_links``...).
LINKS = {"type": "array", "items": object_({
    "rel": {"type": "string"}, "href": {"type": "string"}}, required=["rel", "href"])}
