"""Releasing an instance's volumes in Cinder: shared by compute and conductor.

Both the compute (terminate on its host) and the conductor (local delete
when the host is gone) must leave Cinder exactly as a detach would: every
attachment of the instance deleted, and the volumes marked
``delete_on_termination`` deleted once they are ``available`` again.
"""

import functools
import time

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.volume import cinder as cinder_adapter

LOG = logging.getLogger(__name__)


def wait_for_status(cinder, context, volume_id, statuses, *, timeout, interval=0.5,
                    known=None):
    """Poll the volume until its status is in ``statuses``; return the volume.

    Raises VolumesvcException on an ``error*`` status or when ``timeout``
    seconds pass, so callers never wait forever on a storage backend.

    ``known`` is the volume as the caller last saw it (Cinder's answer to a
    create, or a GET it just made). Already in ``statuses``, it is returned
    without a request; otherwise the first GET comes one ``interval`` later.
    A volume Cinder has just accepted is never ready at once, and in a boot
    storm every needless GET queues in front of the others in cinder-api.
    """
    deadline = time.monotonic() + timeout
    if known is not None:
        if known.get("status") in statuses:
            return known
        time.sleep(interval)
    while True:
        volume = cinder.get(context, volume_id)
        if volume["status"] in statuses:
            return volume
        if volume["status"].startswith("error"):
            raise exception.VolumesvcException(
                f"Volume {volume_id} went to status {volume['status']}")
        if time.monotonic() > deadline:
            raise exception.VolumesvcException(
                f"Volume {volume_id} is still {volume['status']} after {timeout}s "
                f"(wanted {', '.join(statuses)})")
        time.sleep(interval)


def release_volumes(cinder, context, bdms, *, timeout):
    """Delete the BDMs' attachments, then their delete-on-termination volumes.

    A multiattach volume that other servers still use is left to them.

    ``bdms`` are dicts. A failed attachment delete is raised (after trying
    the others): the server must not disappear while Cinder still shows the
    volume attached to it. A volume that cannot be deleted (for example it
    has snapshots, made by createImage) is only logged, as Nova does: the
    server is deleted and the volume stays, detached and ``available``.
    """
    first_error = None
    for bdm in bdms:
        if not bdm.get("volume_id"):
            continue
        try:
            if bdm.get("attachment_id"):
                cinder.attachment_delete(context, bdm["attachment_id"])
        except exception.VolumeAttachmentNotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - release the others first
            LOG.warning("Deleting attachment %s of volume %s failed: %s",
                        bdm["attachment_id"], bdm["volume_id"], exc)
            first_error = first_error or exc
            continue
        if not bdm.get("delete_on_termination"):
            continue
        try:
            volume = cinder.get(context, bdm["volume_id"])
        except exception.VolumeNotFound:
            LOG.info("Volume %s is already gone", bdm["volume_id"])
            continue
        if not _still_attached(volume):
            _delete_volume(cinder, context, volume, timeout)
    if first_error is not None:
        raise first_error


def release_instance(cinder, context, instance_uuid, bdms, *, timeout, page_size):
    """Release the BDMs' volumes, then every other attachment Cinder has for the server.

    Attachments no BDM knows about (made behind our back, or left by an
    attach whose process died) would otherwise outlive the server. A server
    without volume BDMs does not fail its delete because Cinder cannot be
    reached: it holds nothing in Cinder as far as we can know.
    """
    release_volumes(cinder, context, bdms, timeout=timeout)
    known = {b.get("attachment_id") for b in bdms if b.get("attachment_id")}
    try:
        attachments = cinder_adapter.list_all(
            functools.partial(cinder.attachment_list_page, context, instance_id=instance_uuid),
            page_size)
    except (exception.CinderConnectionFailed, exception.ConfigInvalid) as exc:
        if any(b.get("volume_id") for b in bdms):
            raise
        LOG.warning("Could not list Cinder attachments of deleted server %s: %s",
                    instance_uuid, exc)
        return
    for attachment in attachments:
        if attachment["id"] in known:
            continue
        LOG.info("Deleting Cinder attachment %s of volume %s: it claims deleted server %s "
                 "but no BDM knew it", attachment["id"], attachment.get("volume_id"),
                 instance_uuid)
        cinder.attachment_delete(context, attachment["id"])


def _still_attached(volume) -> bool:
    """True when a multiattach volume still has other servers' attachments.

    Their servers keep the volume: Nova's delete of such a volume is refused
    by Cinder and only logged, so the volume outlives this server and goes
    with the last one (if that one is delete_on_termination too). Checked
    up front so the delete does not wait ``timeout`` for an ``available``
    that will not come.
    """
    if volume.get("multiattach") and volume.get("attachments"):
        LOG.info("Volume %s is delete_on_termination but still attached to %s; it stays",
                 volume["id"], ", ".join(a.get("server_id") or "?"
                                      for a in volume["attachments"]))
        return True
    return False


def _delete_volume(cinder, context, volume, timeout):
    """Delete once ``available`` or ``error``; ``volume`` is this delete's own GET of it.

    Cinder marks a volume ``available`` when its last attachment is deleted,
    so that GET usually allows the delete at once, with no second request.
    """
    volume_id = volume["id"]
    try:
        wait_for_status(cinder, context, volume_id, ("available", "error"), timeout=timeout,
                        known=volume)
        cinder.delete(context, volume_id)
    except exception.VolumeNotFound:
        LOG.info("Volume %s is already gone", volume_id)
    except Exception as exc:  # noqa: BLE001 - the volume stays; the delete goes on
        LOG.warning("Volume %s was not deleted on termination and is left in Cinder: %s",
                    volume_id, exc)
