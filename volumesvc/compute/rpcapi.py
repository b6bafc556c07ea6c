"""Client side of the compute RPC interface.

Version history (bump ``VERSION`` and add a line for every change; the
manager imports ``VERSION`` so the two can never disagree):

* 1.0 - Initial version: ping.
"""

from volumesvc import rpc

TOPIC = "compute"
VERSION = "1.0"


class ComputeAPI:
    """What conductors (and, for reads, the API) may ask a compute host.

    Each method names the host it is sent to; keyword-only arguments after
    the context.
    """

    def __init__(self, conf, transport):
        self._conf = conf
        self._client = rpc.get_client(
            transport, conf.compute.topic, version=VERSION,
            version_cap=conf.upgrade_levels.compute)

    def _prepare(self, host, version, **kwargs):
        return self._client.prepare(server=host, version=version, **kwargs)

    def ping(self, ctxt, *, host, timeout=None):
        """Call: return the host name and its capabilities (used by operators)."""
        cctxt = self._prepare(host, "1.0", timeout=timeout or self._conf.rpc_response_timeout)
        return cctxt.call(ctxt, "ping")
