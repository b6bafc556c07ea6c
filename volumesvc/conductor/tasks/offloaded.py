"""Attach and detach for a shelved-offloaded server: Cinder and the BDM, no compute.

An offloaded server has no host and no domain, so there is nothing to
connect: attach records a BDM without a device name and a Cinder attachment
without a connector, completed (the volume shows ``in-use``, as Nova leaves
it); unshelve connects it with the rest. Detach deletes the attachment and
the BDM. Both run in the conductor (doc/source/contributor/contract.rst §3.2 has Nova doing it in
the API; here every attach goes through the conductor's task, so the same
rollback and instance-action reporting apply at every microversion).
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.compute import volumes as boot_volumes
from volumesvc.objects import block_device as bdm_obj

LOG = logging.getLogger(__name__)


def attach(task, instance):
    """Run the offloaded attach for ``task`` (an ``AttachTask``); return the BDM dict.

    The task's ``bdm``/``attachment_id`` are set as soon as each exists so
    its rollback removes exactly what was made.
    """
    if instance.task_state is not None:
        # An unshelve (or delete) started after the API checked the state.
        raise exception.InstanceInvalidState(
            instance_uuid=instance.uuid, attr="task_state", state=instance.task_state,
            method="attach_volume")
    bdms = [b.to_dict() for b in bdm_obj.list_by_instance(task.db, task.context,
                                                          instance.uuid)]
    if any(b.get("volume_id") == task.volume_id for b in bdms):
        raise exception.VolumeAlreadyAttached(volume_id=task.volume_id,
                                              instance_uuids=instance.uuid)
    maximum = task.conf.compute.max_disk_devices_to_attach
    if maximum >= 0 and len(boot_volumes.volume_bdms(bdms)) >= maximum:
        raise exception.TooManyDiskDevices(maximum=maximum)
    request = task.request
    task.bdm = bdm_obj.create(task.db, task.context, {
        "instance_uuid": instance.uuid, "source_type": "volume",
        "destination_type": "volume", "volume_id": task.volume_id, "device_name": None,
        "disk_bus": request["disk_bus"], "device_type": request["device_type"] or "disk",
        "tag": request["tag"], "delete_on_termination": request["delete_on_termination"],
        "boot_index": None}).to_dict()
    task.reserve_attachment(
        instance, lambda **kw: task.cinder.attachment_create(task.context, **kw))
    task.cinder.attachment_complete(task.context, task.attachment_id)
    task._record_action()
    return task.bdm


def detach(cinder, db, context, bdm, attachment_id):
    """Delete the Cinder attachment, then the BDM; a failure rolls ``detaching`` back."""
    try:
        if attachment_id:
            cinder.attachment_delete(context.elevated(), attachment_id)
    except Exception:
        try:
            cinder.roll_detaching(context, bdm.volume_id)
        except Exception as exc:  # noqa: BLE001
            LOG.warning("roll_detaching %s failed: %s", bdm.volume_id, exc)
        raise
    bdm_obj.destroy(db, context, bdm.uuid)
