"""When the host-side connection of a volume may go (multiattach on one host).

Several servers on one host that share a multiattach volume share one host
connection (one iSCSI session, one mapped RBD device): os-brick connects it
once per host. Detaching the volume from one of them must therefore leave
the connection alone while another server *on this host* still uses the
volume, and drop it when the last one leaves. Who still uses it is Cinder's
list of the volume's attachments, mapped to hosts through the conductor
(the compute has no database).
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.virt import block_device

LOG = logging.getLogger(__name__)


def other_users_on_host(context, cinder, conductor, host, instance_uuid, volume_id):
    """Servers other than ``instance_uuid`` on ``host`` with an attachment of the volume."""
    try:
        volume = cinder.get(context, volume_id)
    except exception.VolumeNotFound:
        return []
    users = []
    for entry in volume.get("attachments") or []:
        server = entry.get("server_id")
        if not server or server == instance_uuid or server in users:
            continue
        try:
            other = conductor.instance_get(context, instance_uuid=server)
        except exception.InstanceNotFound:
            continue  # a deleted server's leftover attachment holds no connection here
        if other.get("host") == host:
            users.append(server)
    return users


def disconnect(context, *, cinder, conductor, driver, host, instance_uuid, connection_info):
    """Disconnect the volume from this host unless another server here uses it.

    Returns True when the connection was dropped. Only a multiattach volume
    can have another user; any other volume is disconnected at once.
    """
    if block_device.is_multiattach(connection_info):
        volume_id = block_device.volume_id(connection_info)
        users = other_users_on_host(context, cinder, conductor, host, instance_uuid,
                                    volume_id)
        if users:
            LOG.info("Keeping the host connection of volume %s on %s: still used by %s",
                     volume_id, host, ", ".join(users))
            return False
    driver.disconnect_volume(connection_info)
    return True
