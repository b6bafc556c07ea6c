"""The compute's removal of a server from this host: its domain, then its volumes' host side.

Why one function: a delete (``ComputeManager.terminate_instance``) and the
reaping of a domain whose server was deleted while this compute looked down
(``compute/running_deleted.py``) take the same server apart the same way.
What differs stays with the caller: a delete then releases the Cinder
attachments and destroys the record; a reaped server's attachments were
released already, so only volumes nobody attached since are disconnected.
"""

from volumesvc.compute import instances as compute_instances
from volumesvc.compute import volumes as boot_volumes


def destroy_on_host(context, *, driver, attacher, instance, bdms, released=False):
    """Destroy ``instance``'s domain with its ``bdms``' disks, then disconnect the volumes.

    ``released``: Cinder let go of the volumes before the domain went (see
    ``VolumeAttacher.disconnect_all``). A failure to disconnect is logged;
    one to destroy the domain is raised (the volumes are still in use).
    """
    driver.destroy(compute_instances.driver_instance(instance),
                   boot_volumes.block_device_info(bdms))
    attacher.disconnect_all(context, instance["uuid"], bdms, released=released)
