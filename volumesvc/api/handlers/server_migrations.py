"""/servers/{id}/migrations: a server's in-progress live migrations (admin).

GET lists them and GET ``/{migration_id}`` shows one (2.23; 404 below):
only live migrations whose status is one of ``IN_PROGRESS`` are shown, any
other id is a 404 with Nova's message. DELETE ``/{migration_id}`` aborts one
(2.24) and POST ``/{migration_id}/action`` ``{"force_complete": null}``
forces it to complete (2.22). Both answer 202 once the request is written
in the migration's ``requested`` (a compare and swap on its status, so a
move that settled meanwhile is refused, not aborted) and cast to the source
compute, whose monitor acts on it; each records an instance action, as Nova
(``live_migration_cancel``, ``live_migration_force_complete``).

Errors, as Nova's: 404 for a server the caller cannot see; 409 when the
server is locked (non-admins) or not ``migrating`` (force-complete: also not
``active``); abort: 404 for a migration not of the server, 400 for one
that is not a live migration or not in a status it accepts (``running``,
from 2.65 also ``accepted``, ``queued`` and ``preparing``); force-complete:
400 for a migration not of the server or not ``running``. A migration
that is not a live migration takes neither (400).
"""

from volumesvc import exception
from volumesvc.api import errors, validation, versioned
from volumesvc.api import microversions as mv
from volumesvc.api.logic import states
from volumesvc.api.policies import server_migrations as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_migrations as schema
from volumesvc.api.views import migrations as views
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import migration as migration_obj

_LIST_FROM = mv.V2_23_MIGRATION_TYPE
_ABORT_FROM = mv.V2_24_ABORT_MIGRATION
_FORCE_FROM = mv.V2_22_FORCE_COMPLETE


def _instance(req, server_id, rule):
    instance = get_instance(req, server_id)
    authorize(req.context, rule, {"project_id": instance.project_id})
    return instance


def _migration_id(migration_id, instance_uuid):
    """The URL's id as an int; a non-number (or one no row can have) is not found."""
    if not (migration_id.isascii() and migration_id.isdigit()) or \
            int(migration_id) > validation.MAX_INT:
        raise exception.MigrationNotFoundForInstance(migration_id=migration_id,
                                                     instance_id=instance_uuid)
    return int(migration_id)


def _migration(req, migration_id, instance_uuid):
    """The server's migration ``migration_id`` (MigrationNotFoundForInstance otherwise)."""
    return migration_obj.get_for_instance(
        req.deps.db, req.context, _migration_id(migration_id, instance_uuid), instance_uuid)


def _record_and_cast(req, instance, migration, action, request):
    """The instance action, then the wake-up of the source compute (none without one)."""
    ctx = req.context
    action_obj.action_start(req.deps.db, ctx, instance.uuid, action, ctx.request_id,
                            ctx.user_id, ctx.project_id)
    if migration.source_compute is None:
        return
    req.deps.compute.live_migration_control(
        ctx, host=migration.source_compute, instance_uuid=instance.uuid,
        migration_id=migration.id, request=request)


def _request(req, instance, migration, request, allowed, method):
    """Write ``requested`` while the status is one of ``allowed``, else 400 (Nova's).

    Only a live migration takes a request: any other is a 400 too. The
    status is checked again under the row's lock (a move that settled
    since it was read is refused the same way).
    """
    if migration.migration_type != migration_obj.LIVE_MIGRATION:
        raise errors.APIError(400, f"Migration {migration.id} for server {instance.uuid} "
                              "is not live-migration.", errors.BAD_REQUEST)
    try:
        if migration.status not in allowed:
            raise exception.InvalidMigrationState(
                migration_id=migration.id, instance_uuid=instance.uuid,
                state=migration.status, method=method)
        return migration_obj.save(req.deps.db, req.context, migration.id,
                                  {"requested": request}, expected_status=allowed)
    except exception.InvalidMigrationState as exc:
        raise errors.APIError(400, exc.format_message(), errors.BAD_REQUEST) from exc


@versioned.version_handler(_LIST_FROM, name="list_server_migrations")
@validation.query_schema(schema.no_query, _LIST_FROM)
@validation.windows(validation.response_body_schema, views.SERVER_MIGRATION.windows(
    schema.list_server_migrations_response, first=_LIST_FROM))
def list_server_migrations(req, server_id):
    """GET /servers/{id}/migrations → 200 ``{"migrations": [...]}`` (oldest first)."""
    instance = _instance(req, server_id, policies.INDEX)
    migrations = migration_obj.list_in_progress(req.deps.db, req.context,
                                                instance_uuid=instance.uuid)
    return {"migrations": [views.server_migration(req, m) for m in migrations]}, 200


@versioned.version_handler(_LIST_FROM, name="show_server_migration")
@validation.query_schema(schema.no_query, _LIST_FROM)
@validation.windows(validation.response_body_schema, views.SERVER_MIGRATION.windows(
    schema.show_server_migration_response, first=_LIST_FROM))
def show_server_migration(req, server_id, migration_id):
    """GET /servers/{id}/migrations/{migration_id} → 200 ``{"migration": {...}}``; 404."""
    instance = _instance(req, server_id, policies.SHOW)
    where = f"{migration_id} for server {instance.uuid}"
    try:
        migration = _migration(req, migration_id, instance.uuid)
    except exception.MigrationNotFoundForInstance:
        raise exception.NotFound(
            f"In-progress live migration {migration_id} is not found for server "
            f"{instance.uuid}.") from None
    if migration.migration_type != migration_obj.LIVE_MIGRATION:
        raise exception.NotFound(f"Migration {where} is not live-migration.")
    if not views.is_live_in_progress(migration):
        raise exception.NotFound(f"Live migration {where} is not in progress.")
    return {"migration": views.server_migration(req, migration)}, 200


@versioned.version_handler(_ABORT_FROM, name="delete_server_migration")
@validation.response_body_schema(schema.no_body_response, _ABORT_FROM)
def delete_server_migration(req, server_id, migration_id):
    """DELETE /servers/{id}/migrations/{migration_id} → 202: abort; 400, 404, 409."""
    instance = _instance(req, server_id, policies.DELETE)
    states.check_gate(req.context, instance, states.ABORT_LIVE_MIGRATION)
    migration = _migration(req, migration_id, instance.uuid)
    allowed = (migration_obj.ABORTABLE if req.is_at_least(mv.V2_65_ABORT_QUEUED)
               else (migration_obj.RUNNING,))
    migration = _request(req, instance, migration, migration_obj.ABORT, allowed,
                         "abort live migration")
    _record_and_cast(req, instance, migration, "live_migration_cancel", migration_obj.ABORT)
    return None, 202


@versioned.version_handler(_FORCE_FROM, name="run_server_migration_action")
@validation.schema(schema.force_complete, _FORCE_FROM)
@validation.response_body_schema(schema.no_body_response, _FORCE_FROM)
def run_server_migration_action(req, server_id, migration_id):
    """POST /servers/{id}/migrations/{migration_id}/action force_complete → 202; 400, 409."""
    instance = _instance(req, server_id, policies.FORCE_COMPLETE)
    states.check_gate(req.context, instance, states.FORCE_COMPLETE)
    try:
        migration = _migration(req, migration_id, instance.uuid)
    except exception.MigrationNotFoundForInstance as exc:
        # NOTE: Nova answers this one 400, where abort answers 404.
        raise errors.APIError(400, exc.format_message(), errors.BAD_REQUEST) from exc
    migration = _request(req, instance, migration, migration_obj.FORCE_COMPLETE,
                         (migration_obj.RUNNING,), "force complete")
    _record_and_cast(req, instance, migration, "live_migration_force_complete",
                     migration_obj.FORCE_COMPLETE)
    return None, 202
