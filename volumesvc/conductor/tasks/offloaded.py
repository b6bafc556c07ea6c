"""Attach for a shelved-offloaded server: Cinder and the BDM, no compute.

An offloaded server has no host and no domain, so there is nothing to
connect: attach records a BDM without a device name and a Cinder attachment
without a connector, completed (the volume shows ``in-use``, as Nova leaves
it); unshelve connects it with the rest (its detach: ``DetachTask``). It
runs in the conductor (doc/source/contributor/contract.rst §3.2 has Nova doing it in
the API; here every attach goes through the conductor's task, so the same
rollback and instance-action reporting apply at every microversion).
"""

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)


def attach(task, instance):
    """Run the offloaded attach for ``task`` (an ``AttachTask``); return the BDM dict.

    The task's ``attachment_id``/``bdm`` are set as soon as each exists so
    its rollback removes exactly what was made. The BDM is written once,
    with the attachment id, by the same locked insert as a hosted attach
    (``AttachTask.make_bdm``; no device name: unshelve gives it one).
    """
    if instance.task_state is not None:
        # An unshelve (or delete) started after the API checked the state.
        raise exception.InstanceInvalidState(
            instance_uuid=instance.uuid, attr="task_state", state=instance.task_state,
            method="attach_volume")
    task.make_bdm(instance, lambda **kw: task.cinder.attachment_create(task.context, **kw),
                  device_name_for=_no_device)
    task.cinder.attachment_complete(task.context, task.attachment_id)
    task.record_action()
    return task.bdm


def _no_device(used_names):
    """An offloaded server has no guest to name a device in."""
    return None
