"""Client side of the conductor RPC interface.

Version history (bump ``VERSION`` and add a line for every change; the
manager imports ``VERSION`` so the two can never disagree):

* 1.0 - Initial version: service_update.
"""

import oslo_messaging as messaging

from volumesvc import rpc

TOPIC = "conductor"
VERSION = "1.0"


class ConductorAPI:
    """What the API and the computes may ask a conductor.

    Every method takes keyword-only arguments after the context so that a
    new optional argument never shifts positions, and says whether it casts
    (fire and forget, state reported through the DB) or calls (the caller
    needs the answer now, always with an explicit timeout).
    """

    def __init__(self, conf, transport):
        self._conf = conf
        self._client = rpc.get_client(
            transport, conf.conductor.topic, version=VERSION,
            version_cap=conf.upgrade_levels.conductor)

    def can_send_version(self, version):
        return self._client.can_send_version(version)

    def service_update(self, ctxt, *, host, binary, topic, version, capabilities,
                       timeout=None):
        """Call: record a heartbeat for (host, binary); returns the service dict.

        A call rather than a cast so the compute learns (and logs) that it
        cannot reach any conductor: a missed heartbeat is what makes it
        ``down`` for the API.
        """
        cctxt = self._client.prepare(
            version="1.0", timeout=timeout or self._conf.report_interval)
        return cctxt.call(ctxt, "service_update", host=host, binary=binary,
                          topic=topic, version=version, capabilities=capabilities)


# Exceptions a caller can expect across the bus (re-raised as the same class).
RemoteError = messaging.RemoteError
MessagingTimeout = messaging.MessagingTimeout
