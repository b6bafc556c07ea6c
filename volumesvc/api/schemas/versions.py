"""Schemas of the version documents (GET /, /v2, /v2.1)."""

from volumesvc.api.validation import object_

# Nova ignores query strings on the version documents: nothing is allowed,
# and unknown parameters are stripped rather than rejected.
show_versions_query_v2_1 = object_({})

_link = object_({
    "rel": {"type": "string"},
    "href": {"type": "string", "format": "uri"},
    "type": {"type": "string"},
}, required=["rel", "href"])

_media_type = object_({"base": {"type": "string"}, "type": {"type": "string"}},
                      required=["base", "type"])

_version_common = {
    "id": {"type": "string", "enum": ["v2.0", "v2.1"]},
    "status": {"type": "string", "enum": ["CURRENT", "SUPPORTED", "DEPRECATED"]},
    "version": {"type": "string"},
    "min_version": {"type": "string"},
    "updated": {"type": "string"},
    "links": {"type": "array", "items": _link},
}

list_versions_response_v2_1 = object_({
    "versions": {"type": "array", "items": object_(
        _version_common, required=list(_version_common))},
}, required=["versions"])

show_version_response_v2_1 = object_({
    "version": object_(dict(_version_common, **{
        "media-types": {"type": "array", "items": _media_type}}),
        required=[*_version_common, "media-types"]),
}, required=["version"])
