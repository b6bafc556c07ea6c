"""The ``evacuate`` server action: start a server of a dead host on another host.

Admin only, as Nova's (``os_compute_api:os-evacuate``). Only servers whose
disks are all Cinder volumes: their disks live in Cinder, not on the dead
host, so the destination only needs the volumes attached with its own
connector. What the API can tell at once is refused with Nova's answer: a
named host that is not a compute (404), the server's own host (400), a
server whose compute is still up (400: the dead host must really be dead,
or two guests would write the same volumes), a local root disk (400), a
server not ``ACTIVE``, ``STOPPED`` or ``ERROR``, or in a task (409; no lock
check, as Nova). The task becomes ``rebuilding`` (a compare and swap), the
``evacuate`` action and the migration row (``evacuation``, ``accepted``)
are recorded and the conductor is cast (``conductor/tasks/evacuate.py``).

200 as Nova: ``{"adminPass": ...}`` below 2.14, no body from 2.14. From
2.95 the server ends ``STOPPED`` whatever it was before; before 2.95 it
keeps its state (an ``ERROR`` server ends ``ACTIVE``).
"""

import secrets
import string

from oslo_utils import strutils

from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import server_lifecycle
from volumesvc.api.logic import states
from volumesvc.api.policies import server_evacuate as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_evacuate as schema
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states, vm_states

ACTION = "evacuate"
GATE = states.Gate("evacuate", frozenset({vm_states.ACTIVE, vm_states.STOPPED,
                                          vm_states.ERROR}),
                   frozenset({None}), check_lock=False)
_PASSWORD_CHARS = string.ascii_letters + string.digits
_PASSWORD_LENGTH = 12


def _bad(message):
    return errors.APIError(400, message, errors.BAD_REQUEST)


def _password(req, body, on_shared_storage):
    """Nova's: the given one, else a new one (none below 2.14 on shared storage)."""
    if "adminPass" in body:
        if on_shared_storage:
            raise _bad("admin password can't be changed on existing disk")
        return body["adminPass"]
    if on_shared_storage:
        return None
    return "".join(secrets.choice(_PASSWORD_CHARS) for _ in range(_PASSWORD_LENGTH))


def _check_host(req, instance, host):
    if host is not None:
        view = compute_host.get(req.deps.conf, req.deps.db, req.context, host)
        if not view.registered:
            raise errors.APIError(404, f"Compute host {host} not found.", errors.NOT_FOUND)
    if instance.host == host:
        raise _bad("The target host can't be the same one.")


def _check_server(req, instance):
    """After the state gate, as Nova: the server's compute is down, its disks volumes."""
    if not instance.host:
        raise _bad(f"Server {instance.uuid} has no host to be evacuated from.")
    source = compute_host.get(req.deps.conf, req.deps.db, req.context, instance.host)
    if source.up:
        raise _bad(f"Compute service of {instance.host} is still in use.")
    bdms = bdm_obj.list_by_instance(req.deps.db, req.context, instance.uuid)
    if bdm_obj.has_local_root(bdms):
        raise _bad(f"Server {instance.uuid} has a local root disk; only servers whose "
                   "disks are all Cinder volumes can be evacuated.")


@validation.schema(schema.evacuate_v2_1, mv.V2_1_BASE, mv.before(mv.V2_14_EVACUATE_SHARED))
@validation.schema(schema.evacuate_v2_14, mv.V2_14_EVACUATE_SHARED,
                   mv.before(mv.V2_29_EVACUATE_FORCE))
@validation.schema(schema.evacuate_v2_29, mv.V2_29_EVACUATE_FORCE,
                   mv.before(mv.V2_68_NO_FORCE))
@validation.schema(schema.evacuate_v2_68, mv.V2_68_NO_FORCE)
def _evacuate(req, server_id, body):
    """evacuate → 200 (see the module)."""
    ctx, db = req.context, req.deps.db
    instance = get_instance(req, server_id)
    authorize(ctx, policies.EVACUATE, {"project_id": instance.project_id})
    body = validation.validate_body(_evacuate, req.version, body)
    host = body.get("host")
    shared = None
    if not req.is_at_least(mv.V2_14_EVACUATE_SHARED):
        shared = strutils.bool_from_string(body["onSharedStorage"], strict=True)
    force = strutils.bool_from_string(body.get("force", False), strict=True)
    if force and not host:
        raise _bad("Can't force to a non-provided destination")
    password = _password(req, body, shared)
    target_state = vm_states.STOPPED if req.is_at_least(mv.V2_95_EVACUATE_STOPPED) else None
    _check_host(req, instance, host)
    states.check_gate(ctx, instance, GATE)
    _check_server(req, instance)
    server_lifecycle.begin(req, instance, GATE, task_states.REBUILDING, ACTION)
    migration = migration_obj.create(
        db, ctx, instance_uuid=instance.uuid, migration_type=migration_obj.EVACUATION,
        source_compute=instance.host, source_node=instance.node or instance.host,
        dest_compute=host, dest_node=host, new_instance_type_id=instance.flavor_id,
        old_instance_type_id=instance.flavor_id,
        request_options={"force": force, "target_state": target_state})
    try:
        req.deps.conductor.evacuate_instance(ctx, instance_uuid=instance.uuid,
                                             migration_id=migration.id, host=host,
                                             force=force, target_state=target_state)
    except Exception:
        migration_obj.save(db, ctx, migration.id, {"status": migration_obj.ERROR})
        instance_obj.save(db, ctx, instance.uuid, {"task_state": None},
                          expected_task_state=[task_states.REBUILDING])
        raise
    if not req.is_at_least(mv.V2_14_EVACUATE_SHARED) and req.conf.api.enable_instance_password:
        return {"adminPass": password}, 200
    return None, 200


ACTIONS = {"evacuate": _evacuate}
