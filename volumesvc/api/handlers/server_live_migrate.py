"""The ``os-migrateLive`` server action: move a running server to another host.

Admin only, as Nova's. What the API can tell at once is a 400 with Nova's
message: a named host that is not a compute or is the server's own host, a
block migration (volumesvc moves only servers whose disks are all Cinder
volumes, so there is no disk to copy; ``block_migration: auto`` and
``false`` are the same), a server with a local root disk. The server must
be ``ACTIVE`` with no task (409 otherwise). The task becomes ``migrating``
(a compare and swap: of two requests one wins), the ``live-migration``
action and the migration row (``accepted``) are recorded, and the
conductor is cast to check the destination and hand the move to the
source compute (``conductor/tasks/live_migrate.py``). 202, no body: as
Nova from 2.34, the checks that need the hosts run after the answer, and
their failure is in the migration (``error``) and the server's actions.
"""

from oslo_utils import strutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import server_lifecycle
from volumesvc.api.logic import states
from volumesvc.api.policies import server_live_migrate as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_live_migrate as schema
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states, vm_states

ACTION = "live-migration"
GATE = states.Gate("live_migrate", frozenset({vm_states.ACTIVE}), frozenset({None}))


def _bad(message):
    return errors.APIError(400, message, errors.BAD_REQUEST)


def _check_request(req, instance, host, block_migration):
    if block_migration is True:
        raise _bad("Block migration is not supported: volumesvc live-migrates servers "
                   "whose disks are all Cinder volumes, which need no copy. Use "
                   "block_migration false (or auto).")
    bdms = bdm_obj.list_by_instance(req.deps.db, req.context, instance.uuid)
    if bdm_obj.has_local_root(bdms):
        raise _bad(f"Migration pre-check error: server {instance.uuid} has a local root "
                   "disk; only servers whose disks are all Cinder volumes can be "
                   "live-migrated.")
    if host is None:
        return
    view = compute_host.get(req.deps.conf, req.deps.db, req.context, host)
    if not view.registered:
        raise exception.ComputeHostNotFound(host=host)
    if host == instance.host:
        raise _bad(f"Unable to migrate instance ({instance.uuid}) to current host "
                   f"({host}).")
    if not view.up:
        raise _bad(f"Compute service of {host} is unavailable at this time.")


@validation.schema(schema.migrate_live_v2_1, mv.V2_1_BASE,
                   mv.before(mv.V2_25_BLOCK_MIGRATION_AUTO))
@validation.schema(schema.migrate_live_v2_25, mv.V2_25_BLOCK_MIGRATION_AUTO,
                   mv.before(mv.V2_30_LIVE_MIGRATE_FORCE))
@validation.schema(schema.migrate_live_v2_30, mv.V2_30_LIVE_MIGRATE_FORCE,
                   mv.before(mv.V2_68_NO_FORCE))
@validation.schema(schema.migrate_live_v2_68, mv.V2_68_NO_FORCE)
def _migrate_live(req, server_id, body):
    """os-migrateLive → 202 (see the module)."""
    ctx, db = req.context, req.deps.db
    instance = get_instance(req, server_id)
    authorize(ctx, policies.MIGRATE_LIVE, {"project_id": instance.project_id})
    body = validation.validate_body(_migrate_live, req.version, body)
    host = body.get("host")
    block = body["block_migration"]
    block = None if block == "auto" else strutils.bool_from_string(block, strict=True)
    force = strutils.bool_from_string(body.get("force", False), strict=True)
    states.check_gate(ctx, instance, GATE)
    _check_request(req, instance, host, block)
    server_lifecycle.begin(req, instance, GATE, task_states.MIGRATING, ACTION)
    migration = migration_obj.create(
        db, ctx, instance_uuid=instance.uuid, source_compute=instance.host,
        source_node=instance.node or instance.host, dest_compute=host, dest_node=host,
        new_instance_type_id=instance.flavor_id, old_instance_type_id=instance.flavor_id,
        request_options={"force": force})
    try:
        req.deps.conductor.live_migrate_instance(ctx, instance_uuid=instance.uuid,
                                                 migration_id=migration.id, host=host,
                                                 force=force)
    except Exception:
        migration_obj.save(db, ctx, migration.id, {"status": migration_obj.ERROR})
        instance_obj.save(db, ctx, instance.uuid, {"task_state": None},
                          expected_task_state=[task_states.MIGRATING])
        raise
    return None, 202


ACTIONS = {"os-migrateLive": _migrate_live}
