"""createImage requests whose API process died, and the snapshots failed ones left.

A createImage runs in the API process alone (``api/logic/snapshot.py``):
one Cinder snapshot per volume, then a Glance image naming them. An API
process killed in between answers nobody and undoes nothing: its event
(``api_snapshot_instance``) would stay in progress for ever and its
snapshots would keep their volumes from being deleted, with no image that
names them. Nova leaves both behind; an operator would have to find them.

So the API marks what it makes (``volume/snapshots.py``): every snapshot is
created with the request's id and server in its metadata, and the image
gets an id derived from the two. The conductors' abandoned snapshot
cleanup (``[conductor] abandoned_snapshot_cleanup_interval``) then, on each
run:

* ends every createImage event still running ``[conductor]
  create_image_grace`` seconds after it started. An ``active`` image of
  the request means the work was done and only the answer lost: the event
  ends ``Success``. Otherwise it ends ``Error`` and the image record, if
  one was made (``queued``: its upload never came), is deleted. The finish
  is a compare and swap, so an API request that was only slow learns it
  lost and deletes its own image (CreateImageAbandoned);
* deletes the deletable snapshots whose request ended ``Error`` (or was
  marked by a failed request's undo), and takes the request's marks off
  those whose request succeeded, so that later runs read nothing more for
  them. Snapshots of a request still running are left alone.
"""

import datetime

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.objects import base
from volumesvc.objects import instance_action as action_obj
from volumesvc.volume import snapshots as volume_snapshots

LOG = logging.getLogger(__name__)

# Abandoned requests ended per run, oldest first; the rest wait for the next run.
BATCH = 50
ABANDONED = ("The API process running this createImage stopped before it was done (the "
             "request ran longer than [conductor] create_image_grace); its snapshots are "
             "deleted.")
ANSWER_LOST = ("The API process running this createImage stopped after the image was "
               "made; only its answer was lost.")


class ImageRequests:
    """What one conductor does for createImage leftovers (its manager owns one)."""

    def __init__(self, conf, *, db, cinder, glance):
        self.conf = conf
        self.db = db
        self.cinder = cinder
        self.glance = glance

    def run(self, context) -> dict:
        """One run: end abandoned requests, then settle the snapshots. What it did, by kind."""
        ended = self.end_abandoned(context)
        deleted, kept = self.settle_snapshots(context)
        return {"ended": ended, "deleted": deleted, "kept": kept}

    # -- requests ---------------------------------------------------------------

    def end_abandoned(self, context) -> list:
        """End the createImage events older than the grace; the request ids this run ended."""
        cutoff = base.utcnow() - datetime.timedelta(
            seconds=self.conf.conductor.create_image_grace)
        ended = []
        for event in action_obj.list_running_events(
                self.db, context, volume_snapshots.CREATE_IMAGE_EVENT, started_before=cutoff,
                limit=BATCH):
            try:
                if self._end_one(context, event):
                    ended.append(event.request_id)
            except Exception:  # noqa: BLE001 - Glance or the database: the next run again
                LOG.exception("Could not end the abandoned createImage %s of server %s",
                              event.request_id, event.instance_uuid)
        return ended

    def _end_one(self, context, event) -> bool:
        image_id = volume_snapshots.image_id_for(event.instance_uuid, event.request_id)
        image = self._image(context, image_id)
        if image is not None and image.get("status") == "active":
            won = action_obj.event_finish_if_running(
                self.db, context, event.instance_uuid, event.request_id,
                volume_snapshots.CREATE_IMAGE_EVENT, details=ANSWER_LOST)
            if won:
                LOG.warning("createImage %s of server %s (started %s) was left running by "
                            "its API process; its image %s is active: ended Success",
                            event.request_id, event.instance_uuid, event.start_time,
                            image_id)
            return won
        won = action_obj.event_finish_if_running(
            self.db, context, event.instance_uuid, event.request_id,
            volume_snapshots.CREATE_IMAGE_EVENT, result="Error", details=ABANDONED)
        if not won:
            return False
        LOG.warning("createImage %s of server %s (started %s) was left running by its API "
                    "process without an active image: ended Error, its snapshots are "
                    "deleted", event.request_id, event.instance_uuid, event.start_time)
        # NOTE: also when no image was seen: one may have been made since.
        try:
            self.glance.delete(context, image_id)
            LOG.info("Deleted image %s of the abandoned createImage %s", image_id,
                     event.request_id)
        except exception.ImageNotFound:
            pass
        return True

    def _image(self, context, image_id):
        try:
            return self.glance.get(context, image_id)
        except exception.ImageNotFound:
            return None

    # -- snapshots ---------------------------------------------------------------

    def settle_snapshots(self, context) -> tuple[list, list]:
        """Delete what failed requests left, unmark what succeeded ones made: (deleted, kept)."""
        deleted, kept = [], []
        for snapshot in volume_snapshots.deletable(self.cinder, context,
                                                   self.conf.cinder.list_page_size):
            try:
                verdict = self._verdict(context, snapshot)
            except Exception:  # noqa: BLE001 - Glance or the database: the next run again
                LOG.exception("Could not tell whether Cinder snapshot %s is still needed",
                              snapshot["id"])
                continue
            if verdict == "delete":
                if volume_snapshots.delete_left(self.cinder, context, snapshot["id"]):
                    deleted.append(snapshot["id"])
            elif verdict == "keep":
                try:
                    self.cinder.delete_snapshot_metadata(
                        context, snapshot["id"],
                        (volume_snapshots.REQUEST_KEY, volume_snapshots.SERVER_KEY))
                except exception.SnapshotNotFound:
                    continue
                kept.append(snapshot["id"])
        return deleted, kept

    def _verdict(self, context, snapshot) -> str | None:
        """"delete", "keep" (the request made its image) or None (nothing to do yet)."""
        if volume_snapshots.marked_for_undo(snapshot):
            return "delete"
        metadata = snapshot.get("metadata") or {}
        request_id = metadata.get(volume_snapshots.REQUEST_KEY)
        instance_uuid = metadata.get(volume_snapshots.SERVER_KEY)
        if not request_id or not instance_uuid:
            return None
        event = action_obj.find_event(self.db, context, instance_uuid, request_id,
                                      volume_snapshots.CREATE_IMAGE_EVENT)
        if event is None:
            # No record of the request (archived): its image is the only witness.
            image = self._image(context, volume_snapshots.image_id_for(instance_uuid,
                                                                       request_id))
            return "keep" if image is not None and image.get("status") == "active" \
                else "delete"
        if event.finish_time is None:
            return None
        return "keep" if event.result == "Success" else "delete"

