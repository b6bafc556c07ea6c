"""The migration representations per microversion: /os-migrations and /servers/{id}/migrations.

``MIGRATION`` (the list of every server's moves): 2.23 adds
``migration_type``, and ``links`` to the migration under its server while
it is an in-progress live migration (the ones ``/servers/{id}/migrations``
shows); 2.59 adds ``uuid``; 2.80 ``user_id`` and ``project_id``.
``SERVER_MIGRATION`` (an in-progress live migration of one server, from
2.23): its progress in bytes, ``server_uuid``; 2.59 ``uuid``; 2.80 the
owner. Times are Nova's ``2026-01-01T12:00:00.000000`` (naive UTC).
"""

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr
from volumesvc.api.schemas.parameter_types import LINKS
from volumesvc.api.views import servers as server_views
from volumesvc.objects import migration as migration_obj

_STR = {"type": "string"}
_NULLABLE_STR = {"type": ["string", "null"]}
_INT = {"type": "integer"}
_NULLABLE_INT = {"type": ["integer", "null"]}


def _time(value):
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def is_live_in_progress(migration) -> bool:
    """What ``/servers/{id}/migrations`` shows (and ``links`` point to)."""
    return (migration.migration_type == migration_obj.LIVE_MIGRATION
            and migration.status in migration_obj.IN_PROGRESS)


def _links(migration, ctx):
    """Self and bookmark links of the migration under its server."""
    return [{"rel": link["rel"], "href": f"{link['href']}/migrations/{migration.id}"}
            for link in server_views.links(ctx.req, migration.instance_uuid)]


_CREATED = Field("created_at", _STR, lambda m, ctx: _time(m.created_at))
_HOSTS = tuple(Field(name, _NULLABLE_STR, attr(name))
               for name in ("dest_compute", "dest_host", "dest_node"))
_ID = Field("id", _INT, attr("id"))
_SOURCE = tuple(Field(name, _NULLABLE_STR, attr(name))
                for name in ("source_compute", "source_node"))
_STATUS = Field("status", _STR, attr("status"))
_UPDATED = Field("updated_at", _NULLABLE_STR, lambda m, ctx: _time(m.updated_at))
_LATER = (Field("uuid", _STR, attr("uuid"), first=mv.V2_59_MIGRATION_PAGING),
          Field("user_id", _NULLABLE_STR, attr("user_id"),
                first=mv.V2_80_MIGRATION_OWNER_FILTER),
          Field("project_id", _NULLABLE_STR, attr("project_id"),
                first=mv.V2_80_MIGRATION_OWNER_FILTER))

MIGRATION = Representation("migration", (
    _CREATED, *_HOSTS, _ID,
    Field("instance_uuid", _STR, attr("instance_uuid")),
    Field("new_instance_type_id", _NULLABLE_INT, attr("new_instance_type_id")),
    Field("old_instance_type_id", _NULLABLE_INT, attr("old_instance_type_id")),
    *_SOURCE, _STATUS, _UPDATED,
    Field("migration_type", {"type": "string", "enum": list(migration_obj.TYPES)},
          attr("migration_type"), first=mv.V2_23_MIGRATION_TYPE),
    Field("links", LINKS, _links, first=mv.V2_23_MIGRATION_TYPE,
          when=lambda m, ctx: is_live_in_progress(m)),
    *_LATER,
))


def _bytes(name):
    return Field(f"{name}_bytes", _NULLABLE_INT, attr(name))


SERVER_MIGRATION = Representation("server_migration", (
    _CREATED, *_HOSTS,
    _bytes("disk_processed"), _bytes("disk_remaining"), _bytes("disk_total"),
    _ID,
    _bytes("memory_processed"), _bytes("memory_remaining"), _bytes("memory_total"),
    Field("server_uuid", _STR, attr("instance_uuid")),
    *_SOURCE, _STATUS, _UPDATED, *_LATER,
))


def migration(req, row) -> dict:
    return MIGRATION.render(req.version, row, req=req)


def server_migration(req, row) -> dict:
    return SERVER_MIGRATION.render(req.version, row)
