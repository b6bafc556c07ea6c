"""Cinder's side of a swap volume: ending the migration Cinder started, if it did.

Cinder swaps the volume of an attachment (PUT os-volume_attachments) while it
retypes or migrates an in-use volume, and then waits for
``os-migrate_volume_completion``. An operator's own swap has no migration
behind it; the old volume has no ``migration_status`` then and Cinder must
not be called.
"""

from oslo_log import log as logging

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
