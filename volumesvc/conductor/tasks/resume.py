"""Re-running an accepted attach whose first conductor died.

A request is re-run (``conductor/volume_requests.py``) when nobody can say
how far its first run got: the conductor may have died before it did
anything, after the Cinder attachment, after the BDM or after its cast to
the compute. The records say where it stopped, so each re-run looks before
it acts:

attach (the live BDM of the volume on the server, made since the request):

* none: nothing happened (or it was rolled back): run the attach. A
  ``reserved`` Cinder attachment of the volume on the server that no BDM
  knows is deleted first: the dead run made it and died before its BDM;
* a BDM without an attachment id (an attach writes both at once; such a
  BDM was left by something else): deleted, and the attach runs;
* an attachment id but no connection info: the compute was told, or was
  about to be: it is told again with ``recovered=True`` and skips the work
  if it has it already (``compute/started_work.py``);
* connection info: the attach is done.

A shelved-offloaded server has no compute: its BDM with an attachment id
only needs the attachment completed, again if need be.

A detach's re-run is ``DetachTask``'s own (``conductor/tasks/detach.py``).
"""

import datetime

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import vm_states

LOG = logging.getLogger(__name__)

# NOTE: the request's time is the API host's clock, a BDM's the conductor's
# that wrote it. A BDM of the volume on the server cannot predate the
# request (the API refused the attach if there was one), so this only keeps
# a skewed clock from hiding the request's own BDM.
CLOCK_SKEW = datetime.timedelta(seconds=60)


def live_bdm(db, context, instance_uuid, volume_id, since=None):
    """The live BDM of ``volume_id`` on the server made since ``since``, or None."""
    try:
        bdm = bdm_obj.get_by_volume_and_instance(db, context, volume_id, instance_uuid)
    except exception.VolumeBDMNotFound:
        return None
    if since is not None and bdm.created_at is not None and \
            bdm.created_at < since - CLOCK_SKEW:
        return None
    return bdm


def action_recorded(task) -> bool:
    """True when the request's ``attach_volume`` action exists (its first run made it)."""
    try:
        action_obj.get_action(task.db, task.context, task.instance_uuid,
                              task.context.request_id)
    except exception.NotFound:
        return False
    return True


def attach(task, instance):
    """Go on with ``task`` (an ``AttachTask``) from where its first run stopped."""
    bdm = live_bdm(task.db, task.context, instance.uuid, task.volume_id, task.since)
    if bdm is not None and bdm.attachment_id:
        return _finish(task, instance, bdm)
    if bdm is not None:
        LOG.info("Re-run attach of volume %s to %s: deleting BDM %s, which has no Cinder "
                 "attachment", task.volume_id, instance.uuid, bdm.uuid)
        try:
            bdm_obj.destroy(task.db, task.context, bdm.uuid)
        except exception.NotFound:
            pass  # the compute's reconciliation was first
    release_unrecorded_attachments(task, instance.uuid)
    if task.watch is not None:
        # The dead run's attachment create may still be on its way through
        # a slow Cinder: made after the release above, it would stay
        # ``reserved`` with no BDM. Look again once it would be stale.
        task.watch.release_later(task)
    return task.run(instance)


def release_unrecorded_attachments(task, instance_uuid):
    """Delete the Cinder reservations of the volume on the server that no BDM knows.

    The first run may have died between creating the Cinder attachment and
    writing the BDM that holds its id; the re-run makes an attachment of its own. Left
    alone, the first would claim the server without a BDM until the
    compute's reconciliation removed it, ``[compute]
    attachment_reservation_timeout`` later. Only ``reserved`` attachments
    (no connector: no host has done anything with them) are deleted.
    """
    known = {b.attachment_id for b in bdm_obj.list_by_instance(task.db, task.context,
                                                                instance_uuid)
             if b.attachment_id}
    admin = task.context.elevated()
    # NOTE: all_tenants: an admin's request for another project's server has
    # the admin's project, not the volume's.
    for attachment in task.cinder.attachment_get_all(admin, instance_id=instance_uuid,
                                                     volume_id=task.volume_id,
                                                     all_tenants=True):
        if attachment.get("status") != "reserved" or attachment["id"] in known:
            continue
        LOG.info("Re-run attach of volume %s to %s: deleting attachment %s, which its "
                 "first run made and never recorded", task.volume_id, instance_uuid,
                 attachment["id"])
        try:
            task.cinder.attachment_delete(admin, attachment["id"])
        except exception.VolumeAttachmentNotFound:
            pass  # the compute's reconciliation was first


def _finish(task, instance, bdm):
    task.adopt(bdm)
    if bdm.connection_info:
        LOG.info("Re-run attach of volume %s to %s: already attached", task.volume_id,
                 instance.uuid)
        return task.bdm
    if instance.vm_state == vm_states.SHELVED_OFFLOADED:
        # Completing again is harmless; the action may be the only thing missing.
        task.cinder.attachment_complete(task.context, bdm.attachment_id)
        task.record_action()
        return task.bdm
    if not instance.host:
        raise exception.InstanceInvalidState(
            instance_uuid=instance.uuid, attr="host", state=None, method="attach_volume")
    LOG.info("Re-run attach of volume %s to %s: telling compute %s again",
             task.volume_id, instance.uuid, instance.host)
    task.record_action(host=instance.host)
    task.cast(instance, recovered=True)
    return task.bdm
