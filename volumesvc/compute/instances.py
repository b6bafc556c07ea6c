"""The instance record as compute workflows read and write it.

Computes never touch the database: a save goes through the conductor, and the
virt driver gets only the few fields it needs, not the record.
"""


def update_instance(conductor, context, instance_uuid, values, expected=None):
    """Save ``values`` through the conductor; with ``expected`` as a task_state CAS."""
    kwargs = ({"expected_task_state": expected, "check_task_state": True}
              if expected is not None else {})
    return conductor.instance_update(context, instance_uuid=instance_uuid, values=values,
                                     **kwargs)


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
