"""Cinder's side of a swap volume: ending the migration Cinder started, if it did.

Cinder swaps the volume of an attachment (PUT os-volume_attachments) while it
retypes or migrates an in-use volume, and then waits for
``os-migrate_volume_completion``. An operator's own swap has no migration
behind it; the old volume has no ``migration_status`` then and Cinder must
not be called.
"""

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)


def is_migrating(cinder, context, volume_id) -> bool:
    return bool(cinder.get(context, volume_id).get("migration_status"))


def fail(cinder, context, old_volume_id, new_volume_id):
    """End Cinder's migration with an error (Cinder drops the new volume); never raises."""
    try:
        if not is_migrating(cinder, context, old_volume_id):
            return
        cinder.migrate_volume_completion(context, old_volume_id, new_volume_id, error=True)
    except Exception as err:  # noqa: BLE001 - the rollback around it must finish
        LOG.warning("Could not end the migration of volume %s with an error: %s",
                    old_volume_id, err)


def complete(cinder, context, *, old_volume_id, new_volume_id, attachment_id, instance_uuid,
             connector, mountpoint=None, mode=None):
    """End Cinder's migration with success; return ``(save_volume_id, attachment_id)``.

    Cinder moves the new volume's attachment under the old id at the very
    end of its completion, after it has cast the deletion of what is left
    of the migration. Cinder 29's volume service can run that deletion
    first, and deleting a volume's record deletes its attachments with it:
    the call then returns with the volume ``in-use`` and no attachment at
    all (seen with a file volume retyped to rbd, whose old file is deleted
    in a moment). The guest still runs on the disk, so the attachment is
    made again here: the volume is reset to ``available`` (an admin action;
    a non-multiattach ``in-use`` volume takes no attachment), attached
    again to the same server with this host's connector, and completed.
    The returned attachment id is the one the BDM must name; without it
    the reconciliation would later take the disk away from the guest.
    """
    save_volume_id = cinder.migrate_volume_completion(context, old_volume_id, new_volume_id,
                                                      error=False)
    try:
        kept = cinder.attachment_get(context, attachment_id)
    except exception.VolumeAttachmentNotFound:
        kept = None
    if kept and kept.get("volume_id") == save_volume_id:
        return save_volume_id, attachment_id
    LOG.warning("Cinder lost attachment %s of volume %s while it completed the migration "
                "from %s; attaching the volume to %s again", attachment_id, save_volume_id,
                new_volume_id, instance_uuid)
    cinder.reset_status(context, save_volume_id, "available", attach_status="detached")
    made = cinder.attachment_create(context, save_volume_id, instance_uuid,
                                    connector=connector, mountpoint=mountpoint, mode=mode)
    cinder.attachment_complete(context, made["id"])
    return save_volume_id, made["id"]
