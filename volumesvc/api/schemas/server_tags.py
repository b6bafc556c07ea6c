"""Schemas of /servers/{id}/tags[/{tag}] (API 2.26).

A tag is 1-60 characters without ``/`` or ``,`` (``parameter_types.TAG``);
a server has at most 50 (``objects/tag.py``).
"""

from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import object_
from volumesvc.objects.tag import MAX_TAGS

_TAGS = {"type": "array", "items": parameter_types.TAG, "maxItems": MAX_TAGS}
update_all = object_({"tags": _TAGS}, required=["tags"])
# PUT /servers/{id}/tags/{tag} takes no body: Nova reads none.
update = {"type": ["null", "object"], "additionalProperties": False}

no_query = object_({})

tags_response = object_({"tags": {"type": "array", "items": {"type": "string"}}},
                        required=["tags"])
no_body_response = None
