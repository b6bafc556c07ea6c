"""Schemas of GET /os-migrations, one constant per version range.

Below 2.59 the query takes the six filters and ignores any other key;
2.59 adds paging (``limit``, ``marker``) and ``changes-since`` and refuses
unknown keys (Nova's 2.59 schema is strict); 2.66 adds ``changes-before``,
2.80 the ``user_id`` and ``project_id`` filters. The filters of 2.1 may
repeat (the last value counts); the keys added later are taken once
(Nova's ``single_param``).
"""

import copy

from volumesvc.api import microversions as mv
from volumesvc.api.schemas import parameter_types
from volumesvc.api.validation import multi_params, object_


def _single(schema):
    """A query key given at most once."""
    return {**multi_params(schema), "maxItems": 1}


_STRING = _single({"type": "string"})
_TIME = _single({"type": "string", "format": "date-time"})

_FILTERS = ("hidden", "host", "instance_uuid", "source_compute", "status", "migration_type")
list_migrations_query_v2_1 = object_({key: multi_params({"type": "string"}) for key in _FILTERS})
list_migrations_query_v2_59 = copy.deepcopy(list_migrations_query_v2_1)
list_migrations_query_v2_59["properties"].update({
    "limit": _single(parameter_types.QUERY_NON_NEGATIVE_INT),
    "marker": _STRING,
    "changes-since": _TIME,
})
list_migrations_query_v2_66 = copy.deepcopy(list_migrations_query_v2_59)
list_migrations_query_v2_66["properties"]["changes-before"] = _TIME
list_migrations_query_v2_80 = copy.deepcopy(list_migrations_query_v2_66)
list_migrations_query_v2_80["properties"].update({"user_id": _STRING, "project_id": _STRING})
LIST_QUERY_WINDOWS = ((mv.V2_1_BASE, list_migrations_query_v2_1),
                      (mv.V2_59_MIGRATION_PAGING, list_migrations_query_v2_59),
                      (mv.V2_66_CHANGES_BEFORE, list_migrations_query_v2_66),
                      (mv.V2_80_MIGRATION_OWNER_FILTER, list_migrations_query_v2_80))


def list_migrations_response(migration, version):
    """2.59 adds the pagination ``migrations_links``."""
    props = {"migrations": {"type": "array", "items": migration}}
    if version >= mv.V2_59_MIGRATION_PAGING:
        props["migrations_links"] = parameter_types.LINKS
    return object_(props, required=["migrations"])
