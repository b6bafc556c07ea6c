"""/os-assisted-volume-snapshots: create and delete (doc/source/contributor/contract.rst §8).

Cinder's remotefs drivers (NFS and friends) keep volumes as files and need
the hypervisor to switch a running server's disk to a new qcow2 overlay
(create) or to merge one back (delete). They call these with a service or
admin token; the work is cast through the conductor to the server's
compute, which reports progress with ``os-update_snapshot_status``.

Every refusal is a 400, as in Nova (kept for compatibility): no BDM for
the volume, a volume attached to more than one server (multiattach: which
server's disk would it be?), a server without a host or busy with a task.
"""

from oslo_serialization import jsonutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.policies import assisted_volume_snapshots as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import assisted_volume_snapshots as schema
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import vm_states


def _bad_request(exc):
    return errors.APIError(400, exc.format_message(), errors.BAD_REQUEST)


def _instance_for(req, volume_id):
    """The one server whose disk the volume is; every refusal a 400.

    The BDMs are read with an admin context: the caller is Cinder on behalf
    of the volume's owner, not the server's project.
    """
    ctx = req.context.elevated()
    bdms = bdm_obj.list_by_volume(req.deps.db, ctx, volume_id)
    if not bdms:
        raise _bad_request(exception.VolumeBDMNotFound(volume_id=volume_id))
    if len({b.instance_uuid for b in bdms}) > 1:
        raise _bad_request(exception.VolumeBDMIsMultiAttach(volume_id=volume_id))
    try:
        instance = instance_obj.get_by_uuid(req.deps.db, ctx, bdms[0].instance_uuid)
    except exception.InstanceNotFound as exc:
        raise _bad_request(exception.VolumeBDMNotFound(volume_id=volume_id)) from exc
    # Nova: any vm_state, but a host and no task running.
    if not instance.host:
        raise _bad_request(exception.InstanceNotReady(instance_id=instance.uuid))
    if instance.task_state is not None:
        raise _bad_request(exception.InstanceInvalidState(
            instance_uuid=instance.uuid, attr="task_state", state=instance.task_state,
            method="volume_snapshot"))
    return instance


@validation.schema(schema.create_assisted_volume_snapshot_v2_1)
@validation.response_body_schema(schema.create_assisted_volume_snapshot_response_v2_1)
def create_assisted_volume_snapshot(req):
    """POST → 200 ``{"snapshot": {"id": <create_info.id or null>, "volumeId": ...}}``."""
    authorize(req.context, policies.CREATE)
    snapshot = req.body["snapshot"]
    volume_id, create_info = snapshot["volume_id"], snapshot["create_info"]
    instance = _instance_for(req, volume_id)
    req.deps.conductor.volume_snapshot_create(
        req.context, instance_uuid=instance.uuid, volume_id=volume_id,
        create_info=create_info)
    return {"snapshot": {"id": create_info.get("id"), "volumeId": volume_id}}, 200


def _delete_info(req) -> dict:
    raw = req.last("delete_info")
    try:
        info = jsonutils.loads(raw) if raw is not None else None
    except ValueError as exc:
        raise errors.APIError(400, f"delete_info is not JSON: {exc}",
                              errors.BAD_REQUEST) from exc
    if not isinstance(info, dict) or not isinstance(info.get("volume_id"), str):
        raise errors.APIError(400, "delete_info must be a JSON object with volume_id",
                              errors.BAD_REQUEST)
    return info


# Nova counts this query with its list routes: unknown keys are a 400 from 2.75.
@validation.query_schema(schema.delete_assisted_volume_snapshot_query_v2_1,
                         strict_from=mv.V2_75_STRICT_QUERY)
@validation.response_body_schema(schema.delete_assisted_volume_snapshot_response_v2_1)
def delete_assisted_volume_snapshot(req, snapshot_id):
    """DELETE ``?delete_info=<JSON>`` → 204.

    400: delete_info missing or not JSON with a volume_id, no BDM, a
    multiattach volume, a bad state, or an offline merge (``merge_target_file``)
    on a server that is not active (only a running domain can commit).
    """
    authorize(req.context, policies.DELETE)
    delete_info = _delete_info(req)
    volume_id = delete_info["volume_id"]
    instance = _instance_for(req, volume_id)
    if delete_info.get("merge_target_file") and instance.vm_state != vm_states.ACTIVE:
        raise _bad_request(exception.InstanceInvalidState(
            instance_uuid=instance.uuid, attr="vm_state", state=instance.vm_state,
            method="volume_snapshot_delete"))
    req.deps.conductor.volume_snapshot_delete(
        req.context, instance_uuid=instance.uuid, volume_id=volume_id,
        snapshot_id=snapshot_id, delete_info=delete_info)
    return None, 204
