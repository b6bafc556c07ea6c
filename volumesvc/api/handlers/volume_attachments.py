"""/servers/{id}/os-volume_attachments: list, show, attach, update/swap, detach.

The representation per microversion is doc/source/contributor/contract.rst §3.1; POST answers 200
with the reserved device below 2.101 (a conductor RPC call) and 202 with no
body from 2.101 (a cast). The synchronous checks are in ``logic/attach.py``;
this module reads the request, applies policy and project scoping, and
talks to Cinder and the conductor.
"""

from oslo_log import log as logging
from oslo_utils import strutils, uuidutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.logic import attach as logic
from volumesvc.api.logic import ownership, states
from volumesvc.api.policies import volume_attachments as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import get_instance
from volumesvc.api.schemas import volume_attachments as schema
from volumesvc.api.views import volume_attachments as views
from volumesvc.objects import attachment_status
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import volume_request as request_obj
from volumesvc.states import attach_states, task_states, vm_states
from volumesvc.volume import detaching

LOG = logging.getLogger(__name__)


def _authorize(req, rule, instance):
    authorize(req.context, rule, {"project_id": instance.project_id,
                                  "user_id": instance.user_id})


def _volume(req, volume_id, *, owned=True):
    """Cinder's view of the volume; VolumeNotFound (404) when it has none.

    ``owned``: another project's volume is as unknown as a missing one
    (logic/ownership.py). Detach passes False: what a server holds it may
    always let go of, whoever owns it.
    """
    if not uuidutils.is_uuid_like(volume_id):
        raise exception.VolumeNotFound(volume_id=volume_id)
    volume = req.deps.cinder.get(req.context, volume_id)
    return ownership.check_volume(req.context, volume) if owned else volume


def _visible(req, bdm) -> bool:
    """Volume BDMs only; from 2.89 only those with a Cinder attachment id."""
    if not bdm.volume_id:
        return False
    return bool(bdm.attachment_id) or not req.is_at_least(mv.V2_89_ATTACHMENT_IDS)


def _bdm_of(req, instance, volume_id, *, hide_legacy=False):
    """The (volume, server) BDM, else 404; ``hide_legacy``: GET-one from 2.89."""
    try:
        bdm = bdm_obj.get_by_volume_and_instance(req.deps.db, req.context, volume_id,
                                                 instance.uuid)
    except exception.VolumeBDMNotFound:
        bdm = None
    if bdm is None or (hide_legacy and not _visible(req, bdm)):
        raise exception.VolumeNotAttachedToInstance(instance_uuid=instance.uuid,
                                                    volume_id=volume_id)
    return bdm


def _failed(req, instance, bdms):
    """From 2.106: the failed attaches still shown, except for volumes attached again."""
    if not req.is_at_least(mv.V2_106_ATTACHMENT_STATUS):
        return []
    live = {bdm.volume_id for bdm in bdms}
    return [bdm for bdm in attachment_status.list_failed(
        req.deps.db, req.context, instance.uuid, req.conf.api.failed_attachment_ttl)
        if bdm.volume_id not in live]


def _failed_of(req, instance, volume_id):
    """The shown failed attach of ``volume_id`` (2.106), else None."""
    if not req.is_at_least(mv.V2_106_ATTACHMENT_STATUS):
        return None
    return attachment_status.get_failed(req.deps.db, req.context, instance.uuid, volume_id,
                                        req.conf.api.failed_attachment_ttl)


def _response(envelope, view=views.READ, last=None):
    return validation.windows(validation.response_body_schema,
                              views.ATTACHMENT.windows(envelope, view=view, last=last))


def _int_param(req, key, default):
    value = req.last(key)
    if value is None:
        return default
    return validation.bounded_int(value, key, code=errors.QUERY_INVALID)


# --- list / show ---------------------------------------------------------------------------

@validation.query_schema(schema.list_volume_attachments_query_v2_1,
                         strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.list_volume_attachments_response)
def list_volume_attachments(req, server_id):
    """GET → 200 ``{"volumeAttachments": [...]}``; limit/offset paginate the BDMs."""
    instance = get_instance(req, server_id)
    _authorize(req, policies.INDEX, instance)
    bdms = bdm_obj.list_by_instance(req.deps.db, req.context, instance.uuid)
    # 2.106: failed attaches follow the live BDMs (failed ones have their ids).
    bdms = bdms + _failed(req, instance, bdms)
    # NOTE: as in Nova (common.limited), the page is cut from all BDMs before
    # local disks and 2.89-invisible ones are left out; limit 0 = max_limit.
    max_limit = req.conf.api.max_limit
    offset = _int_param(req, "offset", 0)
    limit = min(max_limit, _int_param(req, "limit", 0) or max_limit)
    page = bdms[offset:offset + limit]
    return {"volumeAttachments": [views.attachment(req, bdm, instance.uuid)
                                  for bdm in page if bdm.deleted or _visible(req, bdm)]}, 200


@validation.query_schema(schema.show_volume_attachment_query_v2_1)
@_response(schema.show_volume_attachment_response)
def show_volume_attachment(req, server_id, volume_id):
    """GET one (``{volume_id}``) → 200; 404 ``Instance <s> is not attached to volume <v>``."""
    instance = get_instance(req, server_id)
    _authorize(req, policies.SHOW, instance)
    try:
        bdm = _bdm_of(req, instance, volume_id, hide_legacy=True)
    except exception.VolumeNotAttachedToInstance:
        bdm = _failed_of(req, instance, volume_id)
        if bdm is None:
            raise
    return {"volumeAttachment": views.attachment(req, bdm, instance.uuid)}, 200


# --- accepted requests (2.101 attach, every detach) -------------------------------------------

def _record_request(req, kind, kwargs):
    """Record a request about to be cast; its uuid.

    Why: the bus forgets a cast once a conductor takes it; with the row, a
    request whose conductor dies (or whose cast is lost) is re-run by
    another conductor (conductor/volume_requests.py), not dropped after
    the 202.
    """
    return request_obj.create(req.deps.db, req.context, kind=kind,
                              instance_uuid=kwargs["instance_uuid"],
                              volume_id=kwargs["volume_id"], params=kwargs).uuid


def _forget_request(req, request_uuid):
    """The cast failed: nothing will run the request, so nothing may re-run it."""
    if request_uuid is None:
        return
    try:
        request_obj.delete(req.deps.db, req.context, request_uuid)
    except Exception as exc:  # noqa: BLE001 - the cast's failure is the answer
        LOG.warning("Could not forget volume request %s after its cast failed; a conductor "
                    "will run it after [conductor] volume_request_grace: %s",
                    request_uuid, exc)


# --- attach ----------------------------------------------------------------------------------

def _asked(attachment) -> dict:
    """What an attach body asks for that tells a retry from another request (2.107)."""
    flag = attachment.get("delete_on_termination")
    return dict(device=attachment.get("device"), tag=attachment.get("tag"),
                delete_on_termination=None if flag is None else strutils.bool_from_string(
                    flag, strict=True), read_only=attachment.get("read_only"))


def _retried_attach(req, instance, volume_bdms, attachment):
    """From 2.107, the live attachment a retried attach asks for again, else None."""
    if not req.is_at_least(mv.V2_107_IDEMPOTENT_ATTACH):
        return None
    bdm = logic.same_attachment(instance, volume_bdms, **_asked(attachment))
    return bdm if bdm is not None and _visible(req, bdm) else None


def _record_attach(req, kwargs):
    """Record an accepted attach (``_record_request``), one per volume and server at a time.

    ``VolumeAlreadyAttached`` when the server got the volume since the
    checks, ``VolumeAttachPending`` while another accepted attach of it is
    owed (``volume_request.create_attach``): identical attaches sent at
    once all passed the checks, and only one of them may be cast.
    """
    return request_obj.create_attach(req.deps.db, req.context,
                                     instance_uuid=kwargs["instance_uuid"],
                                     volume_id=kwargs["volume_id"], params=kwargs).uuid


def _raced_attach(req, instance, attachment, refusal):
    """The answer to an attach that lost the race to record it (``_record_attach``).

    Below 2.107 the ``refusal``, the 400 a retry gets. From 2.107 the answer a
    retry gets when it asks for what the winner asked for: the attachment
    once the winner made it, else the winner's own empty 202 (its attach is
    under way, and this one is that attach); another request keeps the 400.
    """
    if not req.is_at_least(mv.V2_107_IDEMPOTENT_ATTACH):
        raise refusal
    if isinstance(refusal, exception.VolumeAttachPending):
        if logic.same_request(refusal.kwargs["pending"], **_asked(attachment)):
            return None, 202
        raise refusal
    volume_bdms = bdm_obj.list_by_volume(req.deps.db, req.context, refusal.kwargs["volume_id"])
    existing = _retried_attach(req, instance, volume_bdms, attachment)
    if existing is None:
        raise refusal
    return {"volumeAttachment": views.attachment(req, existing, instance.uuid)}, 202


def _created_response():
    """Response windows of POST: the attachment below 2.101, no body from 2.101, and
    from 2.107 either no body (a new attach) or the attachment a retry found."""
    below_async = views.ATTACHMENT.windows(
        schema.show_volume_attachment_response, view=views.CREATED,
        last=mv.before(mv.V2_101_ASYNC_ATTACH))
    retried = views.ATTACHMENT.windows(
        schema.retried_attach_response, view=views.READ, first=mv.V2_107_IDEMPOTENT_ATTACH)
    return validation.windows(validation.response_body_schema, below_async + [
        (mv.V2_101_ASYNC_ATTACH, None)] + retried)


@validation.windows(validation.schema, schema.CREATE_WINDOWS)
@_created_response()
def create_volume_attachment(req, server_id):
    """POST → 200 with the attachment below 2.101; 202 with no body from 2.101.

    404 server/volume; 409 lock/state, multiattach volume on a host without
    the capability; 400 device, already attached, multiattach below 2.60.
    Below 2.101 the conductor's own refusals (400/403/409) come back too.
    From 2.107 a volume already attached to this server as asked answers
    202 with that attachment (its GET body) instead of the 400, before the
    state gates: nothing changes, so nothing needs the server's state.
    From 2.101 one accepted attach of a volume to a server is owed at a
    time (``_record_attach``): a repeat sent while it is owed is the 400
    below 2.107 and from 2.107, when it asks the same, that attach (202,
    no body until it has made its attachment), so identical attaches sent
    at once make one attach and fail none.
    From 2.108 ``read_only``: true makes a read-only attachment (409 when
    Cinder is older than volume API 3.54 or the server's compute cannot, 503
    when the conductor cannot); false for a volume with Cinder's read-only
    flag is a 400.
    """
    ctx, deps = req.context, req.deps
    instance = get_instance(req, server_id)
    _authorize(req, policies.CREATE, instance)
    attachment = req.body["volumeAttachment"]
    volume_id = attachment["volumeId"]
    device = attachment.get("device")
    tag = attachment.get("tag")
    volume = _volume(req, volume_id)
    volume_bdms = bdm_obj.list_by_volume(deps.db, ctx, volume_id)
    existing = _retried_attach(req, instance, volume_bdms, attachment)
    if existing is not None:
        return {"volumeAttachment": views.attachment(req, existing, instance.uuid)}, 202
    logic.check_attach(ctx, version=req.version, instance=instance, volume=volume,
                       volume_bdms=volume_bdms, device=device, tag=tag)
    logic.check_host_capabilities(req.conf, deps.db, ctx, instance, volume)
    read_only = attachment.get("read_only")
    logic.check_read_only(ctx, deps.cinder, volume, read_only)
    # NOTE: the multiattach flag travels with the request so neither the
    # conductor nor the compute has to ask Cinder about the volume again.
    kwargs = dict(instance_uuid=instance.uuid, volume_id=volume_id, device=device, tag=tag,
                  multiattach=bool(volume.get("multiattach")),
                  delete_on_termination=strutils.bool_from_string(
                      attachment.get("delete_on_termination", False), strict=True))
    if read_only:
        kwargs["read_only"] = True
    if req.is_at_least(mv.V2_101_ASYNC_ATTACH):
        try:
            request_uuid = _record_attach(req, kwargs)
        except exception.VolumeAlreadyAttached as refusal:
            return _raced_attach(req, instance, attachment, refusal)
        try:
            deps.conductor.attach_volume(ctx, wait=False, request_uuid=request_uuid, **kwargs)
        except Exception:
            _forget_request(req, request_uuid)
            raise
        return None, 202
    bdm = deps.conductor.attach_volume(ctx, wait=True, **kwargs)
    return {"volumeAttachment": views.created(req, bdm, instance.uuid, volume_id)}, 200


# --- update / swap -----------------------------------------------------------------------------

def _rw_attachments(req, volume) -> int:
    if not volume.get("multiattach") or len(volume.get("attachments") or []) < 2:
        return len(volume.get("attachments") or [])
    modes = [req.deps.cinder.attachment_get(req.context, entry["attachment_id"])
             .get("attach_mode") for entry in volume["attachments"]]
    return sum(1 for mode in modes if mode in ("rw", "null", None))


def _swap(req, instance, old_volume_id, attachment):
    """Check, take the ``swapping_volume`` task state, record the action, cast.

    The task state is what keeps a second swap, a detach and the
    dangling-attachment reconciliation off the server until the compute has
    copied the disk or rolled the swap back (compute/swap.py).
    """
    ctx, deps = req.context, req.deps
    old_volume = _volume(req, old_volume_id, owned=False)
    try:
        new_volume = _volume(req, attachment["volumeId"])
    except exception.VolumeNotFound as exc:
        # The new volume comes from the body: a bad request, not a missing URL.
        raise errors.APIError(400, exc.format_message(), errors.BAD_REQUEST) from exc
    bdm = _bdm_of(req, instance, old_volume_id)
    if req.is_at_least(mv.V2_85_UPDATE_ATTACHMENT):
        _update_flag(req, instance, bdm, attachment)
    logic.check_swap(ctx, instance, old_volume, new_volume,
                     _rw_attachments(req, old_volume))
    try:
        instance_obj.save(deps.db, ctx, instance.uuid,
                          {"task_state": task_states.SWAPPING_VOLUME},
                          expected_task_state=[None])
    except exception.UnexpectedTaskStateError as exc:
        raise states.invalid_state(get_instance(req, instance.uuid), states.SWAP.action,
                                   "task_state") from exc
    try:
        action_obj.action_start(deps.db, ctx, instance.uuid, "swap_volume", ctx.request_id,
                                ctx.user_id, ctx.project_id)
        deps.conductor.swap_volume(ctx, instance_uuid=instance.uuid,
                                   old_volume_id=old_volume_id,
                                   new_volume_id=new_volume["id"])
    except Exception:
        LOG.exception("Swap of volume %s on %s could not be started", old_volume_id,
                      instance.uuid)
        instance_obj.save(deps.db, ctx, instance.uuid, {"task_state": None})
        raise


def _update_flag(req, instance, bdm, attachment):
    logic.check_not_mutated(attachment, bdm, instance)
    if "delete_on_termination" in attachment:
        flag = strutils.bool_from_string(attachment["delete_on_termination"], strict=True)
        bdm_obj.save(req.deps.db, req.context, bdm.uuid, {"delete_on_termination": flag})


@validation.windows(validation.schema, schema.UPDATE_WINDOWS)
@validation.response_body_schema(schema.update_volume_attachment_response_v2_1)
def update_volume_attachment(req, server_id, volume_id):
    """PUT → 202, no body.

    Below 2.85 always a swap (swap policy). From 2.85 the same volumeId only
    updates delete_on_termination (update policy); another one updates the
    flag and then swaps: the conductor and the compute copy the disk to the
    new volume (conductor/tasks/swap.py, compute/swap.py).
    """
    instance = get_instance(req, server_id)
    attachment = req.body["volumeAttachment"]
    if not req.is_at_least(mv.V2_85_UPDATE_ATTACHMENT) or attachment["volumeId"] != volume_id:
        _authorize(req, policies.SWAP, instance)
        _swap(req, instance, volume_id, attachment)
        return None, 202
    _authorize(req, policies.UPDATE, instance)
    bdm = _bdm_of(req, instance, volume_id)
    _update_flag(req, instance, bdm, attachment)
    return None, 202


# --- detach --------------------------------------------------------------------------------------

@validation.response_body_schema(schema.delete_volume_attachment_response_v2_1)
def delete_volume_attachment(req, server_id, volume_id):
    """DELETE → 202, no body.

    Checks in order: server 404, policy, shelved below 2.20 409, volume 404,
    attachment 404, root disk 400, lock/state 409, compute host down 409,
    Cinder ``os-begin_detaching`` 400 (not for a shelved-offloaded server;
    for a multiattach volume only once ``[cinder] begin_detaching_timeout``
    has passed, volume/detaching.py);
    then the ``detach_volume`` action and the conductor cast.

    From 2.106 a failed attach (no live attachment of the volume) is only
    forgotten: 202, nothing else is touched.
    """
    ctx, deps = req.context, req.deps
    instance = get_instance(req, server_id)
    _authorize(req, policies.DELETE, instance)
    if _forget_failed(req, instance, volume_id):
        return None, 202
    logic.check_shelved(req.version, instance, states.DETACH.action)
    volume = _volume(req, volume_id, owned=False)
    bdm = _bdm_of(req, instance, volume_id)
    logic.check_root(bdm)
    states.check_gate(ctx, instance, states.DETACH,
                      vm_states=logic.gate_vm_states(req.version, states.DETACH))
    logic.check_host_up(req.conf, deps.db, ctx, instance)
    # NOTE: as Nova, no os-begin_detaching for a shelved-offloaded server:
    # its volumes may be only ``reserved`` (offload left an attachment with
    # no connector), which Cinder refuses to begin detaching.
    offloaded = instance.vm_state == vm_states.SHELVED_OFFLOADED
    if not offloaded:
        # Another server's detach of a multiattach volume is waited for.
        detaching.begin_detaching(req.conf, deps.cinder, ctx, volume_id)
    marked = _mark_detaching(req, instance, bdm, offloaded)
    request_uuid = None
    try:
        action_obj.action_start(deps.db, ctx, instance.uuid, "detach_volume", ctx.request_id,
                                ctx.user_id, ctx.project_id)
        kwargs = dict(instance_uuid=instance.uuid, volume_id=volume_id,
                      attachment_id=logic.attachment_id_for(bdm, volume, instance.uuid))
        request_uuid = _record_request(req, request_obj.DETACH, kwargs)
        deps.conductor.detach_volume(ctx, request_uuid=request_uuid, **kwargs)
    except Exception:
        # Nothing will detach it: give the volume back its in-use status.
        LOG.exception("Detach of volume %s from %s could not be started", volume_id,
                      instance.uuid)
        _forget_request(req, request_uuid)
        if not offloaded:
            deps.cinder.roll_detaching(ctx, volume_id)
        if marked:
            bdm_obj.save(deps.db, ctx, bdm.uuid, {
                key: getattr(bdm, key) for key in attachment_status.STATUS_FIELDS})
        raise
    return None, 202


def _forget_failed(req, instance, volume_id) -> bool:
    """DELETE of a shown failed attach (2.106) clears its record; False if there is none."""
    if _failed_of(req, instance, volume_id) is None:
        return False
    try:
        bdm_obj.get_by_volume_and_instance(req.deps.db, req.context, volume_id, instance.uuid)
        return False  # attached again: the DELETE is a detach
    except exception.VolumeBDMNotFound:
        pass
    attachment_status.forget_failed(req.deps.db, req.context, instance.uuid, volume_id)
    return True


def _mark_detaching(req, instance, bdm, offloaded) -> bool:
    """``detaching`` until the compute has finished (it clears any old fault).

    A shelved-offloaded server's detach runs in the conductor at once, with
    nothing to show.
    """
    if offloaded or not instance.host:
        return False
    bdm_obj.save(req.deps.db, req.context, bdm.uuid, attach_states.DETACH_STARTED)
    return True
