"""Server side of the conductor RPC interface.

The conductor is stateless and has the database credentials the computes
lack: every piece of compute state is persisted here.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from volumesvc.conductor import rpcapi
from volumesvc.objects import service as service_obj

LOG = logging.getLogger(__name__)


class ConductorManager:
    """RPC endpoint for topic ``conductor``."""

    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, conf, *, db, transport=None):
        self._conf = conf
        self._db = db
        self._transport = transport

    def service_update(self, context, *, host, binary, topic, version, capabilities):
        service = service_obj.heartbeat(
            self._db, context, host=host, binary=binary, topic=topic,
            version=version, capabilities=capabilities)
        return service.to_dict()
