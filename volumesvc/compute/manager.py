"""Server side of the compute RPC interface: host-local work only.

The compute holds no database credentials. It reads and writes its state
through the conductor and does what only this host can do: libvirt domains,
disk XML, the volume connector and Cinder attachment work.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from volumesvc.compute import rpcapi

LOG = logging.getLogger(__name__)


class ComputeManager:
    """RPC endpoint for topic ``compute``, server ``[DEFAULT] host``."""

    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, conf, *, driver, conductor):
        self._conf = conf
        self.host = conf.host
        self.driver = driver
        self.conductor = conductor

    def init_host(self):
        """Connect the virt driver; called once before the RPC server starts."""
        self.driver.init_host(self.host)

    def cleanup_host(self):
        self.driver.cleanup_host()

    def capabilities(self):
        """What this host can do, published in the service record."""
        return dict(self.driver.capabilities)

    def ping(self, context):
        return {"host": self.host, "capabilities": self.capabilities()}
