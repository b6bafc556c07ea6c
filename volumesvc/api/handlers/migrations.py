"""GET /os-migrations: the moves of every server (admin).

Nova's filters at every version: ``hidden`` (volumesvc hides no
migration, so a true value lists none), ``host`` (the source or the
destination compute), ``source_compute`` (ignored with ``host``),
``status``, ``instance_uuid``, ``migration_type``; 2.80 adds ``user_id``
and ``project_id``. Below 2.59 every match is listed in the order the rows
were made. From 2.59 the list is newest first by (created_at, id) and
paged: ``limit`` (at most ``[api] max_limit``), ``marker`` (a migration
uuid; an unknown one is a 400), ``changes-since`` and, from 2.66,
``changes-before`` on ``updated_at``; a full page ends with a
``migrations_links`` next link. Fields per version: ``views/migrations.py``.
"""

from oslo_utils import strutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.logic import server_filters
from volumesvc.api.policies import migrations as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import migrations as schema
from volumesvc.api.views import migrations as views
from volumesvc.api.views import servers as server_views
from volumesvc.objects import migration_list

# Query key -> MigrationFilters field, for the equality filters.
_FILTERS = {"host": "host", "source_compute": "source_compute", "status": "status",
            "instance_uuid": "instance_uuid", "migration_type": "migration_type"}
_OWNER_FILTERS = {"user_id": "user_id", "project_id": "project_id"}


def _filters(req) -> migration_list.MigrationFilters:
    keys = dict(_FILTERS)
    if req.is_at_least(mv.V2_80_MIGRATION_OWNER_FILTER):
        keys.update(_OWNER_FILTERS)
    filters = migration_list.MigrationFilters(
        **{field: req.last(key) for key, field in keys.items()})
    if req.is_at_least(mv.V2_59_MIGRATION_PAGING):
        filters.changes_since = server_filters.parse_time(req, "changes-since")
    if req.is_at_least(mv.V2_66_CHANGES_BEFORE):
        filters.changes_before = server_filters.parse_time(req, "changes-before")
        if (filters.changes_since and filters.changes_before
                and filters.changes_since > filters.changes_before):
            raise errors.APIError(400, "The value of changes-since must be less than or "
                                  "equal to changes-before.", errors.QUERY_INVALID)
    return filters


def _limit(req) -> int:
    max_limit = req.conf.api.max_limit
    return min(validation.bounded_int(req.last("limit", max_limit), "limit",
                                      code=errors.QUERY_INVALID), max_limit)


def _next_links(req, migrations, limit):
    """Nova's next link: when the page is as long as the limit."""
    if not limit or len(migrations) != limit:
        return []
    params = {key: values for key, values in req.query.items() if key != "marker"}
    params["marker"] = [migrations[-1].uuid]
    return [{"rel": "next", "href": server_views.collection_link(req, "os-migrations",
                                                                 params)}]


def _list(req):
    """(migrations, limit): limit None below 2.59 (no paging)."""
    filters = _filters(req)
    if not req.is_at_least(mv.V2_59_MIGRATION_PAGING):
        migrations, limit = migration_list.list_migrations(
            req.deps.db, req.context, filters), None
    else:
        limit, marker = _limit(req), req.last("marker")
        try:
            migrations = migration_list.list_migrations(
                req.deps.db, req.context, filters, newest_first=True, limit=limit,
                marker=marker)
        except exception.MarkerNotFound as exc:
            raise errors.APIError(400, exc.format_message(), errors.QUERY_INVALID) from exc
    if strutils.bool_from_string(req.last("hidden")):
        # Nova never shows a hidden migration, and volumesvc hides none:
        # asking for the hidden ones lists nothing.
        migrations = []
    return migrations, limit


@validation.query_windows(schema.LIST_QUERY_WINDOWS, strict_from=mv.V2_59_MIGRATION_PAGING)
@validation.windows(validation.response_body_schema,
                    views.MIGRATION.windows(schema.list_migrations_response))
def list_migrations(req):
    """GET /os-migrations → 200 ``{"migrations": [...]}`` (+ ``migrations_links``); 400."""
    authorize(req.context, policies.INDEX)
    migrations, limit = _list(req)
    body = {"migrations": [views.migration(req, m) for m in migrations]}
    links = _next_links(req, migrations, limit)
    if links:
        body["migrations_links"] = links
    return body, 200
