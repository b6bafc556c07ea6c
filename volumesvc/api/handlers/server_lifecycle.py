"""Server lifecycle actions: os-stop, os-start, shelve, shelveOffload, unshelve.

Each action checks its policy and the contract §2 gate, takes its first task_state
with a compare-and-swap (of two concurrent requests exactly one wins, the
other gets Nova's 409), records the instance action under the request id and
casts to the conductor, which finds the compute. The compute moves
the task_state along and reports failures as faults and action events.

Only volume-backed servers may be shelved: an image-backed root disk lives
in the compute's instance directory and offloading would lose it (Nova
uploads it to Glance first; volumesvc does not). ``unshelve`` accepts the
2.77 availability zone and the 2.91 host for a ``SHELVED_OFFLOADED``
server only, as Nova does; the zone must be one a compute service is in and
the host a compute service's host.
"""

from oslo_log import log as logging

from volumesvc import exception, quota
from volumesvc.api import microversions as mv
from volumesvc.api.logic import snapshot, states
from volumesvc.api.policies import server_actions as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import task_states, vm_states

LOG = logging.getLogger(__name__)


def begin(req, instance, gate, task_state, action, values=None):
    """Compare-and-swap the first task_state, then record the instance action."""
    ctx, db = req.context, req.deps.db
    try:
        instance_obj.save(db, ctx, instance.uuid, dict(values or {}, task_state=task_state),
                          expected_task_state=[None])
    except exception.UnexpectedTaskStateError as exc:
        current = instance_obj.get_by_uuid(db, ctx, instance.uuid)
        raise states.invalid_state(current, gate.action, "task_state") from exc
    action_obj.action_start(db, ctx, instance.uuid, action, ctx.request_id, ctx.user_id,
                            ctx.project_id)


def _gated(req, server_id, rule, gate):
    authorize(req.context, rule)
    instance = get_instance(req, server_id)
    states.check_gate(req.context, instance, gate)
    return instance


def stop(req, server_id, body):
    """os-stop → 202. 404; 409 lock/state (active or error, no task)."""
    instance = _gated(req, server_id, policies.STOP, states.STOP)
    begin(req, instance, states.STOP, task_states.POWERING_OFF, "stop")
    req.deps.conductor.stop_instance(req.context, instance_uuid=instance.uuid)
    return None, 202


def start(req, server_id, body):
    """os-start → 202. 404; 409 lock/state (stopped, no task)."""
    instance = _gated(req, server_id, policies.START, states.START)
    begin(req, instance, states.START, task_states.POWERING_ON, "start")
    req.deps.conductor.start_instance(req.context, instance_uuid=instance.uuid)
    return None, 202


def shelve(req, server_id, body):
    """shelve → 202. 404; 409 lock/state; 400 for a server not booted from a volume."""
    instance = _gated(req, server_id, policies.SHELVE, states.SHELVE)
    bdms = bdm_obj.list_by_instance(req.deps.db, req.context, instance.uuid)
    if not snapshot.is_volume_backed(instance, bdms):
        raise exception.ShelveNotSupported(instance_uuid=instance.uuid)
    begin(req, instance, states.SHELVE, task_states.SHELVING, "shelve")
    req.deps.conductor.shelve_instance(req.context, instance_uuid=instance.uuid)
    return None, 202


def shelve_offload(req, server_id, body):
    """shelveOffload → 202 (admin). 404; 409 lock/state (shelved, no task)."""
    instance = _gated(req, server_id, policies.SHELVE_OFFLOAD, states.SHELVE_OFFLOAD)
    begin(req, instance, states.SHELVE_OFFLOAD, task_states.SHELVING_OFFLOADING,
           "shelveOffload")
    req.deps.conductor.shelve_offload_instance(req.context, instance_uuid=instance.uuid)
    return None, 202


def _unshelve_target(req, instance, body):
    """(availability_zone, host, values) of an unshelve request, checked.

    ``availability_zone`` is the zone to place the server in (None: its own
    or any), ``values`` what to store on the instance (a 2.91 ``null`` zone
    unpins it).
    """
    body = body if isinstance(body, dict) and req.is_at_least(mv.V2_77_UNSHELVE_AZ) else {}
    host = body.get("host")
    has_zone = "availability_zone" in body
    zone = body.get("availability_zone")
    if host is not None:
        authorize(req.context, policies.UNSHELVE_TO_HOST)
    if (host is not None or has_zone) and instance.vm_state != vm_states.SHELVED_OFFLOADED:
        what = "a host" if host is not None else "an availability zone"
        raise exception.UnshelveInstanceInvalidState(
            instance_uuid=instance.uuid, what=what, state=instance.vm_state)
    computes = compute_host.list_hosts(req.conf, req.deps.db, req.context)
    if zone is not None and zone not in {c.availability_zone for c in computes}:
        raise exception.AvailabilityZoneNotFound()
    if host is not None:
        target = next((c for c in computes if c.host == host), None)
        if target is None:
            raise exception.ComputeHostNotFound(host=host)
        if zone is not None and target.availability_zone != zone:
            raise exception.UnshelveHostNotInAZ(host=host, availability_zone=zone)
    values = {"availability_zone": zone} if has_zone else {}
    return zone if has_zone else instance.availability_zone, host, values


def unshelve(req, server_id, body):
    """unshelve → 202. 404; 409 lock/state; 400 unknown zone or host; 403 host (policy)."""
    instance = _gated(req, server_id, policies.UNSHELVE, states.UNSHELVE)
    zone, host, values = _unshelve_target(req, instance, body)
    # The quota check and the move to unshelving share one transaction under
    # the project's quota lock (volumesvc/quota.py).
    quota.ensure_lock_row(req.deps.db, req.context, instance.project_id)
    with req.deps.db.writer(req.context):
        quota.check_unshelve(req.deps.db, req.context, req.conf, instance)
        begin(req, instance, states.UNSHELVE, task_states.UNSHELVING, "unshelve", values)
    req.deps.conductor.unshelve_instance(req.context, instance_uuid=instance.uuid,
                                         availability_zone=zone, host=host)
    return None, 202


ACTIONS = {"os-stop": stop, "os-start": start, "shelve": shelve,
           "shelveOffload": shelve_offload, "unshelve": unshelve}
