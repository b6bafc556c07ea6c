"""Deleting the Cinder snapshots a failed request made, once Cinder allows it.

Why: Cinder deletes a snapshot only when it is ``available`` or ``error``.
A createImage that Glance refuses has just asked for its snapshots, which
are still ``creating``; deleting them at once was refused, and every such
request left a snapshot (and a volume that cannot be deleted) behind.

So the undo waits for each snapshot, within one bounded wait for all of
them (``[cinder] snapshot_undo_timeout``), and deletes it. A snapshot
still not deletable when the time is up is marked in Cinder (metadata
``volumesvc_undo = delete``): the mark outlives any process, and the
conductors' periodic cleanup (``conductor/image_requests.py``) deletes
marked snapshots once they are deletable.

An API process that dies in the middle of a createImage undoes nothing.
So each snapshot is made with the request's marks
(:func:`image_request_marks`: the server and the request id, recorded by
Cinder with the snapshot itself) and the image gets an id derived from the
same two (:func:`image_id_for`): a conductor that finds the request's
event still running long after can tell, from Glance alone, whether the
image was made, and find the snapshots to delete if it was not.
"""

import functools
import time
import uuid

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
#: The createImage event (``os-instance-actions``) the API runs the whole request under.
CREATE_IMAGE_EVENT = "api_snapshot_instance"
#: The metadata keys a createImage's snapshots are made with (:func:`image_request_marks`).
REQUEST_KEY = "volumesvc_image_request"
SERVER_KEY = "volumesvc_image_server"
# The namespace of the image ids derived from a request (uuid5: the same
# request always names the same image).
_IMAGE_ID_NAMESPACE = uuid.UUID("6f1d8a52-8e0b-4c7e-9d55-3b0f2a9c4e17")


def image_request_marks(instance_uuid, request_id) -> dict:
    """The metadata a createImage's snapshots carry: which request made them, for which server."""
    return {REQUEST_KEY: request_id, SERVER_KEY: instance_uuid}


def image_id_for(instance_uuid, request_id) -> str:
    """The Glance image id a createImage request gives its image (the same for every caller)."""
    return str(uuid.uuid5(_IMAGE_ID_NAMESPACE, f"{instance_uuid} {request_id}"))


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
    deletable then, which are marked for the conductors' cleanup. Never
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


def deletable(cinder, context, page_size):
    """Every snapshot Cinder would delete now (``available`` or ``error``), every project.

    One paged listing per status, with each snapshot's metadata.
    """
    for status in DELETABLE:
        yield from cinder_adapter.list_all(
            functools.partial(cinder.snapshot_page, context, status=status), page_size)


def marked_for_undo(snapshot) -> bool:
    """Whether a failed request's undo marked ``snapshot`` (:func:`delete_when_deletable`)."""
    return (snapshot.get("metadata") or {}).get(UNDO_KEY) == UNDO_VALUE


def delete_left(cinder, context, snapshot_id) -> bool:
    """Delete a deletable snapshot a failed request left; whether this call deleted it.

    A snapshot gone already, or whose status moved since it was listed, is
    left for the next run (False).
    """
    try:
        cinder.delete_snapshot(context, snapshot_id)
    except exception.SnapshotNotFound:
        return False
    except (exception.Invalid, exception.Conflict) as exc:
        LOG.info("Cinder snapshot %s left by a failed request not deleted yet: %s",
                 snapshot_id, exc)
        return False
    LOG.info("Deleted Cinder snapshot %s left by a failed request", snapshot_id)
    return True
