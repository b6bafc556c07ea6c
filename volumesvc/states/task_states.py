"""The ``task_state`` vocabulary, written once for the API, conductor and compute.

A ``task_state`` names the operation in flight on an instance (``None`` when
there is none). The API sets the first one of an operation, the compute
moves it along with a compare-and-swap on the previous value, so both sides
must spell every value identically: they import it from here. The values are
Nova's (``OS-EXT-STS:task_state`` shows them). A unit test
(``tests/unit/test_vocabulary.py``) refuses a retyped literal elsewhere.

This module imports nothing, so the API and the compute (which may not
import the database layer) can both use it.
"""

# build
SCHEDULING = "scheduling"
BLOCK_DEVICE_MAPPING = "block_device_mapping"
SPAWNING = "spawning"

# delete
DELETING = "deleting"

# snapshot (createImage)
IMAGE_SNAPSHOT = "image_snapshot"

# reboot: the API sets REBOOTING*, the compute moves to PENDING then STARTED.
REBOOTING = "rebooting"
REBOOT_PENDING = "reboot_pending"
REBOOT_STARTED = "reboot_started"
REBOOTING_HARD = "rebooting_hard"
REBOOT_PENDING_HARD = "reboot_pending_hard"
REBOOT_STARTED_HARD = "reboot_started_hard"

# stop/start (os-stop, os-start)
POWERING_OFF = "powering-off"
POWERING_ON = "powering-on"

# shelve, shelveOffload, unshelve (volume-backed servers: no image upload)
SHELVING = "shelving"
SHELVING_OFFLOADING = "shelving_offloading"
UNSHELVING = "unshelving"

# swap volume (os-volume_attachments PUT): set by the API, cleared by the
# compute once the disk was copied or the swap rolled back. volumesvc's own:
# it keeps the dangling-attachment reconciliation off the server while two
# attachments exist for one disk (compute/swap.py).
SWAPPING_VOLUME = "swapping_volume"

# power actions a hard reboot may interrupt (Nova's ALLOW_REBOOT).
PAUSING = "pausing"
UNPAUSING = "unpausing"
SUSPENDING = "suspending"
RESUMING = "resuming"

# Not started by volumesvc, but an instance imported from Nova may carry them
# and the server view maps them to a status.
REBUILDING = "rebuilding"
REBUILD_BLOCK_DEVICE_MAPPING = "rebuild_block_device_mapping"
REBUILD_SPAWNING = "rebuild_spawning"
RESIZE_PREP = "resize_prep"
RESIZE_MIGRATING = "resize_migrating"
RESIZE_MIGRATED = "resize_migrated"
RESIZE_FINISH = "resize_finish"
RESIZE_REVERTING = "resize_reverting"
MIGRATING = "migrating"
UPDATING_PASSWORD = "updating_password"

ALL = frozenset({
    SCHEDULING, BLOCK_DEVICE_MAPPING, SPAWNING, DELETING, IMAGE_SNAPSHOT,
    POWERING_OFF, POWERING_ON, SHELVING, SHELVING_OFFLOADING, UNSHELVING,
    REBOOTING, REBOOT_PENDING, REBOOT_STARTED, REBOOTING_HARD, REBOOT_PENDING_HARD,
    REBOOT_STARTED_HARD, PAUSING, UNPAUSING, SUSPENDING, RESUMING, REBUILDING,
    REBUILD_BLOCK_DEVICE_MAPPING, REBUILD_SPAWNING, RESIZE_PREP, RESIZE_MIGRATING,
    RESIZE_MIGRATED, RESIZE_FINISH, RESIZE_REVERTING, MIGRATING, UPDATING_PASSWORD})


def reboot_steps(hard: bool) -> tuple[str, str, str]:
    """(requested, pending, started) task_states of a SOFT or HARD reboot."""
    if hard:
        return REBOOTING_HARD, REBOOT_PENDING_HARD, REBOOT_STARTED_HARD
    return REBOOTING, REBOOT_PENDING, REBOOT_STARTED
