"""The instance record as compute workflows read and write it.

Computes never touch the database: a save goes through the conductor, and the
virt driver gets only the few fields it needs, not the record.
"""

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)


def update_instance(conductor, context, instance_uuid, values, expected=None):
    """Save ``values`` through the conductor; with ``expected`` as a task_state CAS."""
    kwargs = ({"expected_task_state": expected, "check_task_state": True}
              if expected is not None else {})
    return conductor.instance_update(context, instance_uuid=instance_uuid, values=values,
                                     **kwargs)


def migration_reached(conductor, context, migration_id, statuses):
    """The migration when it is in one of ``statuses``, else None.

    What a move asks after a write whose reply never came was refused
    on its repetition: had the first one been carried out?
    """
    migration = conductor.migration_get(context, migration_id=migration_id)
    return migration if migration["status"] in statuses else None


def take_move(patience, conductor, context, migration, *, expected, status):
    """The compute's take of a move: its status from ``expected`` to ``status``.

    A compare and swap, asked again while no conductor answers; a lost
    answer whose write was made (the migration found at ``status``) is this
    compute's own take: a second cast of the same move waits on the
    instance lock until the first has ended. Returns the migration, or None
    when the move is another run's (a conductor drove it again) or ended.
    """
    try:
        return patience.record(
            f"take migration {migration['uuid']}", conductor.migration_update, context,
            migration_id=migration["id"], values={"status": status}, expected_status=expected,
            done=lambda: migration_reached(conductor, context, migration["id"], (status,)))
    except exception.InvalidMigrationState as exc:
        LOG.info("Migration %s of %s not taken: %s", migration["uuid"],
                 migration["instance_uuid"], exc.format_message())
        return None


# What a config drive tells the guest about its server (virt/configdrive.py).
_CONFIG_DRIVE_FIELDS = ("config_drive", "image_properties", "display_name", "hostname",
                        "launch_index", "availability_zone", "project_id", "metadata",
                        "key_name", "key_data", "user_data")


def driver_instance(instance):
    """The small dict the virt driver needs, from the instance record."""
    flavor = instance.get("flavor") or {}
    out = {"uuid": instance["uuid"], "instance_name": instance.get("instance_name"),
           "memory_mb": flavor.get("memory_mb") or 64, "vcpus": flavor.get("vcpus") or 1}
    out.update({key: instance.get(key) for key in _CONFIG_DRIVE_FIELDS})
    return out
