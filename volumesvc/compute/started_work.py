"""Which volume attaches and detaches this compute process has already started.

Why: a conductor that dies after casting an attach (or a detach) to this
compute leaves its request to be re-run by another conductor, which casts
the same work again (``recovered=True``). The first cast
may still be queued behind the instance lock, or done: either way the
second must not attach the disk twice or detach a volume again. The
compute remembers the work it started, bounded (a compute that runs for
months must not grow without limit; the oldest entries go first, long after
their requests have settled), per manager and never global.

An attach is known by its BDM: every attach reserves a new one. A detach is
known by its BDM *and* its request id: a detach that failed leaves the BDM
attached, and the user's next DELETE is new work with a new request id.
"""

import collections
import threading

from oslo_log import log as logging

from volumesvc.compute import bdm as bdm_mod

LOG = logging.getLogger(__name__)

ATTACH = "attach"
DETACH = "detach"
# Entries kept: far more than the attaches and detaches one compute has in
# flight at once (its executor pool), a few hundred bytes each.
DEFAULT_SIZE = 4096


class StartedWork:
    """A bounded, thread-safe record of (kind, BDM uuid, request id) keys."""

    def __init__(self, size=DEFAULT_SIZE):
        self._size = size
        self._keys: collections.OrderedDict = collections.OrderedDict()
        self._guard = threading.Lock()

    @staticmethod
    def key(kind, bdm_uuid, request_id=None):
        return (kind, bdm_uuid, request_id if kind == DETACH else None)

    def start(self, key) -> bool:
        """Record ``key``; False (nothing recorded) when it was started already."""
        with self._guard:
            if key in self._keys:
                return False
            self._keys[key] = True
            while len(self._keys) > self._size:
                self._keys.popitem(last=False)
            return True

    def __contains__(self, key):
        with self._guard:
            return key in self._keys

    def __len__(self):
        with self._guard:
            return len(self._keys)


def recovered_bdm(conductor, context, kind, instance_uuid, bdm):
    """The BDM a recovered cast should work on, read again; None: nothing to do.

    Gone (the work settled or was rolled back, or the reservation watch
    removed it) is nothing to do for both; an attach whose BDM already has
    its connection info is done.
    """
    current = next((b for b in bdm_mod.listed(conductor, context, instance_uuid)
                    if b.uuid == bdm.uuid), None)
    if current is None:
        LOG.info("Recovered %s of volume %s to %s: its BDM is gone, nothing to do",
                 kind, bdm.volume_id, instance_uuid)
        return None
    if kind == ATTACH and current.has_connection:
        LOG.info("Recovered attach of volume %s to %s: already attached",
                 bdm.volume_id, instance_uuid)
        return None
    return current
