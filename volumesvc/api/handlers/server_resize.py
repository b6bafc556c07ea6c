"""Cold moves: the ``resize``, ``migrate``, ``confirmResize`` and ``revertResize`` actions.

``resize`` gives a server another flavor, ``migrate`` (admin) moves it to
another host with the same one; both stop the guest, move its volumes'
attachments to the destination and start it there (``compute/resize.py``),
and the server waits in ``VERIFY_RESIZE`` until the user confirms (it
stays) or reverts (back to the old host and flavor), or
``[DEFAULT] resize_confirm_window`` confirms it by itself.

What the API can tell at once is answered at once, with Nova's messages: a
flavor that does not exist or is the server's own, a host that is not a
compute or is the server's own (``migrate`` at 2.56), a server whose root
disk is not a volume (its disk is a file on its host, which volumesvc does
not copy: such a server is only resized on its own host, when
``[DEFAULT] allow_resize_to_same_host`` allows it, and never to a smaller
disk), a resize past the project's cores or
ram quota (403; only the growth counts), the wrong state (409). Then the
first task (``resize_prep``) is taken with a compare and swap, the action
and the migration row (``pre-migrating``, with both flavors as the server
has them) recorded, and the conductor cast to choose the destination.

``confirmResize`` writes the records here (the server keeps its new host
and flavor) and only asks the source compute to remove what the server
left there; ``revertResize`` sets ``resize_reverting`` and the migration
``reverting`` and casts the move back.
"""

from volumesvc import exception, quota
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import server_lifecycle
from volumesvc.api.logic import states
from volumesvc.api.policies import server_resize as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_resize as schema
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states, vm_states

_MOVABLE = frozenset({vm_states.ACTIVE, vm_states.STOPPED})
_NO_TASK = frozenset({None})
RESIZE = states.Gate("resize", _MOVABLE, _NO_TASK)
MIGRATE = states.Gate("migrate", _MOVABLE, _NO_TASK)
CONFIRM = states.Gate("confirmResize", frozenset({vm_states.RESIZED}), _NO_TASK)
REVERT = states.Gate("revertResize", frozenset({vm_states.RESIZED}), _NO_TASK)


def _bad(message):
    return errors.APIError(400, message, errors.BAD_REQUEST)


def _volume_backed(req, instance):
    """No local root disk (the live migration's test: the BDMs, not the image ref)."""
    bdms = bdm_obj.list_by_instance(req.deps.db, req.context, instance.uuid)
    return not bdm_obj.has_local_root(bdms)


def _check_image_backed_resize(req, instance, new_flavor):
    """An image-backed server is resized only on its own host, never to a smaller disk.

    Its root disk is a file in the host's instance directory, which
    volumesvc does not copy between hosts; on its own host the file stays
    and is grown to the new flavor's root disk.
    """
    if not req.deps.conf.allow_resize_to_same_host:
        raise _bad(f"Server {instance.uuid} boots from an image: its root disk stays on "
                   "its host, so it can only be resized there, which this deployment "
                   "does not allow ([DEFAULT] allow_resize_to_same_host).")
    if int(new_flavor.get("root_gb") or 0) < int((instance.flavor or {}).get("root_gb")
                                                  or 0):
        raise _bad("Resizing an image-backed server to a smaller root disk is not "
                   "allowed.")


def _start(req, instance, gate, action, migration_type, new_flavor, new_flavor_id,
           host=None):
    """Take the task, record the action and the migration, cast the conductor; 202."""
    ctx, db = req.context, req.deps.db
    server_lifecycle.begin(req, instance, gate, task_states.RESIZE_PREP, action)
    migration = migration_obj.create(
        db, ctx, instance_uuid=instance.uuid, migration_type=migration_type,
        status=migration_obj.PRE_MIGRATING, source_compute=instance.host,
        source_node=instance.node or instance.host,
        old_instance_type_id=instance.flavor_id, new_instance_type_id=new_flavor_id,
        old_flavor=instance.flavor, new_flavor=new_flavor, request_options={"host": host})
    try:
        req.deps.conductor.resize_instance(ctx, instance_uuid=instance.uuid,
                                           migration_id=migration.id,
                                           host=host)
    except Exception:
        migration_obj.save(db, ctx, migration.id, {"status": migration_obj.ERROR})
        instance_obj.save(db, ctx, instance.uuid, {"task_state": None},
                          expected_task_state=[task_states.RESIZE_PREP])
        raise
    return None, 202


@validation.schema(schema.resize)
def _resize(req, server_id, body):
    """resize → 202 (see the module)."""
    ctx, db = req.context, req.deps.db
    instance = get_instance(req, server_id)
    authorize(ctx, policies.RESIZE, {"project_id": instance.project_id})
    body = validation.validate_body(_resize, req.version, body)
    states.check_gate(ctx, instance, RESIZE)
    try:
        flavor = flavor_obj.get_by_flavorid(db, ctx, body["flavorRef"])
    except exception.FlavorNotFound as exc:
        raise _bad("Unable to find specified flavor.") from exc
    if str((instance.flavor or {}).get("flavorid")) == flavor.flavorid:
        raise _bad("When resizing, instances must change flavor!")
    new_flavor = flavor.instance_copy()
    if not _volume_backed(req, instance):
        _check_image_backed_resize(req, instance, new_flavor)
    quota.check_resize(db, ctx, req.deps.conf, instance, instance.flavor or {}, new_flavor)
    return _start(req, instance, RESIZE, "resize", migration_obj.RESIZE, new_flavor,
                  flavor.id)


@validation.schema(schema.migrate_v2_1, mv.V2_1_BASE, mv.before(mv.V2_56_MIGRATE_HOST))
@validation.schema(schema.migrate_v2_56, mv.V2_56_MIGRATE_HOST)
def _migrate(req, server_id, body):
    """migrate → 202 (admin; 2.56 names the host)."""
    ctx, db = req.context, req.deps.db
    instance = get_instance(req, server_id)
    authorize(ctx, policies.MIGRATE, {"project_id": instance.project_id})
    body = validation.validate_body(_migrate, req.version, body) or {}
    host = body.get("host")
    if host is not None:
        authorize(ctx, policies.MIGRATE_HOST, {"project_id": instance.project_id})
    states.check_gate(ctx, instance, MIGRATE)
    if host is not None:
        if not compute_host.get(req.deps.conf, db, ctx, host).registered:
            raise exception.ComputeHostNotFound(host=host)
        if host == instance.host:
            raise _bad(f"Unable to migrate instance ({instance.uuid}) to current host "
                       f"({host}).")
    if not _volume_backed(req, instance):
        raise _bad(f"Server {instance.uuid} boots from an image: only servers whose root "
                   "disk is a Cinder volume can be migrated here.")
    return _start(req, instance, MIGRATE, "migrate", migration_obj.MIGRATION,
                  instance.flavor, instance.flavor_id, host=host)


def _resized(req, server_id, body, handler, rule, gate):
    """The server and its ``finished`` migration, for a confirm or a revert (checks first)."""
    instance = get_instance(req, server_id)
    authorize(req.context, rule, {"project_id": instance.project_id})
    validation.validate_body(handler, req.version, body)
    states.check_gate(req.context, instance, gate)
    migration = migration_obj.latest_cold(req.deps.db, req.context, instance.uuid,
                                          [migration_obj.FINISHED])
    if migration is None:
        raise _bad("Instance has not been resized.")
    return instance, migration


@validation.schema(schema.no_body)
def _confirm_resize(req, server_id, body):
    """confirmResize → 204: the server keeps its new host and flavor."""
    ctx, db = req.context, req.deps.db
    instance, migration = _resized(req, server_id, body, _confirm_resize,
                                   policies.CONFIRM_RESIZE, CONFIRM)
    action_obj.action_start(db, ctx, instance.uuid, "confirmResize", ctx.request_id,
                            ctx.user_id, ctx.project_id)
    try:
        migration_obj.confirm(db, ctx, migration.id)
    except (exception.InvalidMigrationState, exception.UnexpectedTaskStateError,
            exception.InstanceInvalidState) as exc:
        current = instance_obj.get_by_uuid(db, ctx, instance.uuid)
        raise states.invalid_state(current, CONFIRM.action, "vm_state") from exc
    req.deps.conductor.confirm_resize(ctx, instance_uuid=instance.uuid,
                                      migration_id=migration.id)
    return None, 204


@validation.schema(schema.no_body)
def _revert_resize(req, server_id, body):
    """revertResize → 202: back to the old host and flavor."""
    ctx, db = req.context, req.deps.db
    instance, migration = _resized(req, server_id, body, _revert_resize,
                                   policies.REVERT_RESIZE, REVERT)
    quota.check_resize(db, ctx, req.deps.conf, instance, migration.new_flavor or {},
                       migration.old_flavor or {})
    server_lifecycle.begin(req, instance, REVERT, task_states.RESIZE_REVERTING,
                           "revertResize")
    try:
        migration_obj.save(db, ctx, migration.id, {"status": migration_obj.REVERTING},
                           expected_status=[migration_obj.FINISHED])
        req.deps.conductor.revert_resize(ctx, instance_uuid=instance.uuid,
                                         migration_id=migration.id)
    except Exception:
        instance_obj.save(db, ctx, instance.uuid, {"task_state": None},
                          expected_task_state=[task_states.RESIZE_REVERTING])
        raise
    return None, 202


ACTIONS = {"resize": _resize, "migrate": _migrate, "confirmResize": _confirm_resize,
           "revertResize": _revert_resize}
