"""POST /servers/{id}/action: the single top-level key names the action.

Served: ``reboot`` (SOFT/HARD, doc/source/contributor/contract.rst §6 and the §2 gates),
``createImage`` of a volume-backed server (§6, spec 5), and the lifecycle
actions ``os-stop``, ``os-start``, ``shelve``, ``shelveOffload`` and
``unshelve`` (``server_lifecycle.py``), ``lock``, ``unlock`` and
``os-resetState`` (``server_admin_actions.py``), and ``rebuild`` of a
volume-backed server (``server_rebuild.py``), and ``os-getConsoleOutput``
(``console_output.py``, 200 with the output). Any other key is a
400: Nova's ``There is no such action`` for unknown keys, and a message
naming the action for Nova actions volumesvc does not serve.
"""

import flask
from oslo_log import log as logging

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.handlers import (
    console_output,
    server_admin_actions,
    server_evacuate,
    server_lifecycle,
    server_live_migrate,
    server_rebuild,
    server_resize,
)
from volumesvc.api.logic import snapshot, states
from volumesvc.api.policies import server_actions as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import server_actions as schema
from volumesvc.api.views import servers as server_views
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)


# Server actions Nova has and volumesvc does not serve (a clear 400, not
# "no such action", so a client knows the name is right).
NOVA_ONLY_ACTIONS = frozenset({
    "changePassword", "createBackup", "pause",
    "unpause", "suspend", "resume",
    "rescue", "unrescue", "injectNetworkInfo", "resetNetwork",
    "addSecurityGroup", "removeSecurityGroup", "addFixedIp", "removeFixedIp",
    "addFloatingIp", "removeFloatingIp", "os-getVNCConsole",
    "os-getSPICEConsole", "os-getRDPConsole", "os-getSerialConsole", "forceDelete",
    "restore", "trigger_crash_dump", "os-resetNetwork",
})

# Nova's per-image metadata item quota (image_metadata_items).
MAX_IMAGE_METADATA_ITEMS = 128

_REBOOT_TASK_STATE = {"SOFT": task_states.REBOOTING, "HARD": task_states.REBOOTING_HARD}
_REBOOT_GATE = {"SOFT": states.REBOOT_SOFT, "HARD": states.REBOOT_HARD}


def _expected_task_states(gate):
    """The task_states a compare-and-swap save may find; UNSET when the gate checks none."""
    return instance_obj.UNSET if gate.task_states is states.ANY else list(gate.task_states)


def _reboot(req, server_id, body):
    """reboot → 202, no body. 404; 409 lock/state (SOFT and HARD tables of §2)."""
    authorize(req.context, policies.REBOOT)
    ctx, db = req.context, req.deps.db
    reboot_type = body["type"].upper()
    gate = _REBOOT_GATE[reboot_type]
    instance = get_instance(req, server_id)
    states.check_gate(ctx, instance, gate)
    try:
        # Compare-and-swap: of two concurrent reboots exactly one wins.
        instance_obj.save(db, ctx, instance.uuid,
                          {"task_state": _REBOOT_TASK_STATE[reboot_type]},
                          expected_task_state=_expected_task_states(gate))
    except exception.UnexpectedTaskStateError as exc:
        current = instance_obj.get_by_uuid(db, ctx, instance.uuid)
        raise states.invalid_state(current, gate.action, "task_state") from exc
    action_obj.action_start(db, ctx, instance.uuid, "reboot", ctx.request_id, ctx.user_id,
                            ctx.project_id)
    req.deps.conductor.reboot_instance(ctx, instance_uuid=instance.uuid,
                                       reboot_type=reboot_type)
    return None, 202


def _create_image(req, server_id, body):
    """createImage → 202; image_id in the body from 2.45, Location header before.

    Volume-backed servers only (Cinder snapshots + a zero-byte image). 404;
    409 state (no lock check, as in Nova); 403 policy or snapshot quota.
    """
    authorize(req.context, policies.CREATE_IMAGE)
    ctx, deps = req.context, req.deps
    instance = get_instance(req, server_id)
    metadata = body.get("metadata", {})
    if len(metadata) > MAX_IMAGE_METADATA_ITEMS:
        raise exception.OverQuota("Quota exceeded for metadata: image metadata items "
                                  f"limit is {MAX_IMAGE_METADATA_ITEMS}")
    snapshot.check_metadata(metadata)
    bdms = bdm_obj.list_by_instance(deps.db, ctx, instance.uuid)
    if not snapshot.is_volume_backed(instance, bdms):
        raise errors.APIError(
            400, "createImage of a server that does not boot from a volume is not "
            "supported by this service.", errors.BAD_REQUEST)
    authorize(ctx, policies.CREATE_IMAGE_VOLUME_BACKED)
    states.check_gate(ctx, instance, states.CREATE_IMAGE)
    image = snapshot.snapshot_volume_backed(
        ctx, db=deps.db, cinder=deps.cinder, glance=deps.glance, instance=instance,
        name=body["name"], metadata=metadata, bdms=bdms,
        undo_timeout=deps.conf.cinder.snapshot_undo_timeout,
        grace=deps.conf.conductor.create_image_grace)
    if req.is_at_least(mv.V2_45_IMAGE_ID_BODY):
        return {"image_id": image["id"]}, 202
    location = deps.glance.image_url(ctx, image["id"])

    @flask.after_this_request
    def _location(response):
        response.headers["Location"] = location
        return response

    return None, 202


_ACTIONS = {"reboot": _reboot, "createImage": _create_image, **server_lifecycle.ACTIONS,
            **server_admin_actions.ACTIONS, **server_rebuild.ACTIONS,
            **console_output.ACTIONS, **server_live_migrate.ACTIONS, **server_resize.ACTIONS,
            **server_evacuate.ACTIONS}


@validation.windows(validation.schema, schema.REQUEST_WINDOWS)
@validation.windows(validation.response_body_schema,
                    schema.response_windows(server_views.rebuild_windows()))
def run_server_action(req, server_id):
    """POST /servers/{id}/action → 202, 200 for os-getConsoleOutput (see the actions above).

    Each action checks its own policy first thing; an unknown or unserved
    action is a 400 before any policy applies.
    """
    (name, body), = req.body.items()
    handler = _ACTIONS.get(name)
    if handler is None:
        if name in NOVA_ONLY_ACTIONS:
            raise errors.APIError(
                400, f"The '{name}' server action is not supported by this service.",
                errors.BAD_REQUEST)
        raise errors.APIError(400, f"There is no such action: {name}", errors.BAD_REQUEST)
    return handler(req, server_id, body)
