"""The ``lock``, ``unlock`` and ``os-resetState`` server actions.

``lock`` (member) marks the server locked by its ``owner`` (a caller of its
project) or by an ``admin`` (anyone else), with a ``locked_reason`` from
2.73; while locked, every change a non-admin asks for is a 409
(``logic/states.py``). ``unlock`` of a lock taken by the other side needs
``unlock_override`` (admin). ``os-resetState`` (admin) sets vm_state
``active`` or ``error`` and clears the task state, so an operator can free
a server stuck in a task. Each records an instance action, as Nova does.
:data:`ACTIONS` is merged into the dispatch table of ``server_actions.py``.
"""

from volumesvc.api import microversions as mv
from volumesvc.api import validation
from volumesvc.api.policies import server_admin_actions as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_admin_actions as schema
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import vm_states

_RESET_STATES = {"active": vm_states.ACTIVE, "error": vm_states.ERROR}


def _body(func, req, body):
    """The action's own body, checked against its schema at the request's version."""
    return validation.validate_body(func, req.version, body)


def _instance(req, server_id, rule):
    instance = get_instance(req, server_id)
    authorize(req.context, rule, {"project_id": instance.project_id})
    return instance


def _record(req, instance, action):
    ctx = req.context
    action_obj.action_start(req.deps.db, ctx, instance.uuid, action, ctx.request_id,
                            ctx.user_id, ctx.project_id)


def _locker(ctx, instance) -> str:
    """Who a lock by ``ctx`` is taken as: the owning project, or an admin."""
    return "owner" if ctx.project_id == instance.project_id else "admin"


@validation.schema(schema.lock_v2_1, mv.V2_1_BASE, mv.before(mv.V2_73_LOCK_REASON))
@validation.schema(schema.lock_v2_73, mv.V2_73_LOCK_REASON)
def _lock(req, server_id, body):
    """lock → 202; ``locked_reason`` from 2.73 (shown in the server from 2.73)."""
    instance = _instance(req, server_id, policies.LOCK)
    body = _body(_lock, req, body) or {}
    reason = body.get("locked_reason") if req.is_at_least(mv.V2_73_LOCK_REASON) else None
    instance_obj.save(req.deps.db, req.context, instance.uuid, {
        "locked": True, "locked_by": _locker(req.context, instance), "locked_reason": reason})
    _record(req, instance, "lock")
    return None, 202


@validation.schema(schema.unlock)
def _unlock(req, server_id, body):
    """unlock → 202; 403 for a lock of the other side without ``unlock_override``."""
    instance = _instance(req, server_id, policies.UNLOCK)
    _body(_unlock, req, body)
    ctx = req.context
    if instance.locked_by and instance.locked_by != _locker(ctx, instance):
        authorize(ctx, policies.UNLOCK_OVERRIDE, {"project_id": instance.project_id})
    instance_obj.save(req.deps.db, ctx, instance.uuid, {
        "locked": False, "locked_by": None, "locked_reason": None})
    _record(req, instance, "unlock")
    return None, 202


@validation.schema(schema.reset_state)
def _reset_state(req, server_id, body):
    """os-resetState → 202: vm_state active or error, no task (admin)."""
    instance = _instance(req, server_id, policies.RESET_STATE)
    body = _body(_reset_state, req, body)
    _record(req, instance, "resetState")
    instance_obj.save(req.deps.db, req.context, instance.uuid, {
        "vm_state": _RESET_STATES[body["state"]], "task_state": None})
    return None, 202


ACTIONS = {"lock": _lock, "unlock": _unlock, "os-resetState": _reset_state}
