"""Deleting the Cinder snapshots a failed request made, once Cinder allows it.

Why: Cinder deletes a snapshot only when it is ``available`` or ``error``.
A createImage that Glance refuses has just asked for its snapshots, which
are still ``creating``; deleting them at once was refused, and every such
request left a snapshot (and a volume that cannot be deleted) behind.

So the undo waits for each snapshot, within one bounded wait for all of
them (``[cinder] snapshot_undo_timeout``), and deletes it. A snapshot
still not deletable when the time is up is marked in Cinder (metadata
``volumesvc_undo = delete``): the mark outlives any process, and the
conductors' periodic cleanup (:func:`delete_marked`) deletes marked
snapshots once they are deletable.
"""

import functools
import time

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.volume import cinder as cinder_adapter

LOG = logging.getLogger(__name__)

# The statuses in which Cinder deletes a snapshot.
DELETABLE = ("available", "error")
# On its way out already: nothing left to do.
_GOING = frozenset({"deleting", "deleted"})
UNDO_KEY = "volumesvc_undo"
UNDO_VALUE = "delete"
_POLL_SECONDS = 0.5


def _try_delete(cinder, context, snapshot_id) -> bool:
    """Delete the snapshot if its status allows it now; True when nothing is left to do."""
    try:
        status = cinder.get_snapshot(context, snapshot_id).get("status")
        if status in _GOING:
            return True
        if status not in DELETABLE:
            return False
        cinder.delete_snapshot(context, snapshot_id)
    except exception.SnapshotNotFound:
        return True
    except exception.Invalid:
        return False  # its status moved between the read and the delete
    return True


def _mark(cinder, context, snapshot_id, timeout) -> None:
    try:
        cinder.set_snapshot_metadata(context, snapshot_id, {UNDO_KEY: UNDO_VALUE})
    except exception.SnapshotNotFound:
        return
    except Exception:  # noqa: BLE001 - the request's own error is what the caller raises
        LOG.exception("Cinder snapshot %s of a failed request is still not deletable after "
                      "%ss and could not be marked for deletion; delete it by hand",
                      snapshot_id, timeout)
        return
    LOG.warning("Cinder snapshot %s of a failed request is still not deletable after %ss; "
                "marked %s=%s for the conductors' periodic cleanup", snapshot_id, timeout,
                UNDO_KEY, UNDO_VALUE)


def delete_when_deletable(cinder, context, snapshot_ids, *, timeout) -> list:
    """Delete every snapshot of ``snapshot_ids`` as soon as Cinder allows it.

    Waits at most ``timeout`` seconds in all; returns the ids still not
    deletable then, which are marked for :func:`delete_marked`. Never
    raises: the error that made the undo necessary is what matters.
    """
    deadline = time.monotonic() + timeout
    pending = list(snapshot_ids)
    while pending:
        waiting = []
        for snapshot_id in pending:
            try:
                done = _try_delete(cinder, context, snapshot_id)
            except Exception:  # noqa: BLE001 - try every one; mark what is left
                LOG.exception("Could not delete Cinder snapshot %s after a failed request",
                              snapshot_id)
                done = False
            if not done:
                waiting.append(snapshot_id)
        pending = waiting
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(min(_POLL_SECONDS, max(deadline - time.monotonic(), 0)))
    for snapshot_id in pending:
        _mark(cinder, context, snapshot_id, timeout)
    return pending


def delete_marked(cinder, context, page_size) -> list:
    """Delete the deletable snapshots marked by :func:`delete_when_deletable`; their ids.

    One paged listing per deletable status, every project. A marked
    snapshot that is not deletable yet is left for the next run.
    """
    deleted = []
    for status in DELETABLE:
        snapshots = cinder_adapter.list_all(
            functools.partial(cinder.snapshot_page, context, status=status), page_size)
        for snapshot in snapshots:
            if (snapshot.get("metadata") or {}).get(UNDO_KEY) != UNDO_VALUE:
                continue
            try:
                cinder.delete_snapshot(context, snapshot["id"])
            except exception.SnapshotNotFound:
                continue
            except (exception.Invalid, exception.Conflict) as exc:
                LOG.info("Marked Cinder snapshot %s not deleted yet: %s", snapshot["id"], exc)
                continue
            LOG.info("Deleted Cinder snapshot %s left by a failed request", snapshot["id"])
            deleted.append(snapshot["id"])
    return deleted
