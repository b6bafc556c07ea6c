"""The ``vm_state`` vocabulary, written once for the API, conductor and compute.

An instance's ``vm_state`` is a stable condition (what a user sees as the
server's status once no task runs). The values are Nova's, because clients
read them verbatim (``OS-EXT-STS:vm_state``) and filter on them. Everything
that writes or compares a vm_state imports it from here; a unit test
(``tests/unit/test_vocabulary.py``) refuses a retyped literal elsewhere.

This module imports nothing, so the API and the compute (which may not
import the database layer) can both use it.
"""

ACTIVE = "active"
BUILDING = "building"
PAUSED = "paused"
SUSPENDED = "suspended"
STOPPED = "stopped"
RESCUED = "rescued"
RESIZED = "resized"
SOFT_DELETED = "soft-delete"
DELETED = "deleted"
ERROR = "error"
SHELVED = "shelved"
SHELVED_OFFLOADED = "shelved_offloaded"

ALL = frozenset({ACTIVE, BUILDING, PAUSED, SUSPENDED, STOPPED, RESCUED, RESIZED,
                 SOFT_DELETED, DELETED, ERROR, SHELVED, SHELVED_OFFLOADED})
