"""Schemas of /servers/{id}/metadata[/{key}] (Nova's server metadata API).

Keys are 1-255 characters of ``[a-zA-Z0-9-_:. ]`` and values strings of at
most 255 (``parameter_types.METADATA``); ``meta`` of the one-key routes holds
exactly one item.
"""

from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import object_

_METADATA_BODY = object_({"metadata": parameter_types.METADATA}, required=["metadata"])
create = _METADATA_BODY
update_all = _METADATA_BODY
update = object_({"meta": dict(parameter_types.METADATA, minProperties=1, maxProperties=1)},
                 required=["meta"])

no_query = object_({})

_STRINGS = {"type": "object", "additionalProperties": False,
            "patternProperties": {".*": {"type": "string"}}}
metadata_response = object_({"metadata": _STRINGS}, required=["metadata"])
meta_response = object_({"meta": dict(_STRINGS, minProperties=1, maxProperties=1)},
                        required=["meta"])
delete_response = None
