"""The conductor's check that each attach it cast reached its compute.

Why: the attach task casts the work to the server's compute once. A cast
that is lost (taken by a compute that was SIGKILLed before running it, or
dropped by the broker) leaves nothing on the compute that knows of the
attach: its BDM stays ``attaching`` and its Cinder attachment ``reserved``.
The device name is chosen here, so the conductor watches what it cast:
``[compute] attachment_reservation_timeout`` seconds (+1) after the cast it
reads the BDM again, and one that still has no connection is cast again
with ``recovered=True``: a compute that has the work, queued, running or
done, skips the copy (``compute/started_work.py``), one that never had it
runs it. A compute that starts tells every conductor
(``compute_started``), and the checks of its attaches are due at once: a
cast its killed predecessor had taken and lost runs as soon as the compute
is back. After ``ATTEMPTS`` casts the attach is left to the compute's own
reconciliation, which rolls back an attach that made no progress.

An attach whose Cinder attachment create failed without an answer (a
cinder-api that died or a connection reset after Cinder made it) is
watched too: once it would be stale, a ``reserved`` attachment of the
volume on the server that no BDM knows is deleted
(``resume.release_unrecorded_attachments``), so the volume does not stay
``reserved``. Cinder is often still away at that moment (the same outage
that lost the answer): a release that meets a failure that goes away on
its own (``outage.classify``: Cinder unreachable or answering 5xx, the
database down) is tried again, up to ``ATTEMPTS`` times in all, before the compute's
reconciliation is left to find the attachment.

The watches live in the conductor's memory. A conductor that dies with
them loses them: its accepted requests are re-run by another conductor
(``conductor/volume_requests.py``), and a compute that starts reconciles
its servers first.
"""

import heapq
import itertools
import threading
import time

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.common import outage
from volumesvc.conductor.tasks import resume
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import attach_states

LOG = logging.getLogger(__name__)

# Casts of one attach in all (the first one included).
ATTEMPTS = 3


class AttachWatch:
    """Due checks of cast attaches, run by one thread of the conductor process."""

    def __init__(self, conf, *, db, compute_rpcapi):
        self.conf = conf
        self.db = db
        self.compute = compute_rpcapi
        self._due: list = []  # heap of (monotonic due time, sequence, cast)
        self._sequence = itertools.count()
        self._cond = threading.Condition()
        self._thread = None
        self._stopping = False

    def add(self, context, *, host, bdm, multiattach, cast=1):
        """Check ``bdm`` (cast to ``host`` as the ``cast``-th attempt) once it would be stale."""
        self._push((self.check, (context, host, bdm, multiattach, cast)))

    def release_later(self, task, attempt=1):
        """Delete ``task``'s unrecorded Cinder attachment once it would be stale."""
        self._push((self.release, (task, attempt)))

    def release(self, task, attempt) -> bool:
        """Run one due release; True when done, False when left for a later try."""
        try:
            resume.release_unrecorded_attachments(task, task.instance_uuid)
        except Exception as exc:
            if outage.classify(exc) not in outage.RETRYABLE:
                raise
            if attempt >= ATTEMPTS:
                LOG.warning("Could not release the unrecorded attachment of volume %s on %s "
                            "after %d tries (%s); the compute's reconciliation removes it",
                            task.volume_id, task.instance_uuid, attempt, exc)
            else:
                LOG.info("Could not release the unrecorded attachment of volume %s on %s "
                         "yet (%s); trying again later", task.volume_id,
                         task.instance_uuid, exc)
                self.release_later(task, attempt + 1)
            return False
        return True

    def due_now(self, host) -> int:
        """Make every attach check of ``host`` due at once; how many there are.

        Why: the compute of ``host`` has just started. What it had taken
        from its queue before it was killed is lost; what was still queued
        it takes now, before a copy cast now (the copy is then skipped). The
        check itself decides, as at its usual time, whether a cast is needed.
        """
        with self._cond:
            now = time.monotonic()
            due = 0
            entries = []
            for when, sequence, entry in self._due:
                work, args = entry
                if work == self.check and args[1] == host:
                    when, due = now, due + 1
                entries.append((when, sequence, entry))
            heapq.heapify(entries)
            self._due = entries
            self._cond.notify()
        return due

    def _push(self, entry):
        due = time.monotonic() + self.conf.compute.attachment_reservation_timeout + 1
        with self._cond:
            if self._stopping:
                return
            heapq.heappush(self._due, (due, next(self._sequence), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="attach-watch",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def stop(self):
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def _next(self):
        """The next due entry, waiting for it; None once stopping."""
        with self._cond:
            while not self._stopping:
                wait = self._due[0][0] - time.monotonic() if self._due else None
                if wait is not None and wait <= 0:
                    return heapq.heappop(self._due)[2]
                self._cond.wait(wait)
            return None

    def _run(self):
        while (entry := self._next()) is not None:
            work, args = entry
            try:
                work(*args)
            except Exception:  # noqa: BLE001 - one check must not end the others
                LOG.exception("A due check of an attach failed")

    def check(self, context, host, bdm, multiattach, cast) -> bool:
        """Cast the attach again when its BDM still waits for it; True when cast."""
        try:
            current = bdm_obj.get_by_uuid(self.db, context, bdm["uuid"])
            instance = instance_obj.get_by_uuid(self.db, context, current.instance_uuid)
        except exception.NotFound:
            return False  # done and gone, rolled back, or the server deleted
        if (current.connection_info or current.attach_status != attach_states.ATTACHING
                or instance.host != host):
            return False
        if cast >= ATTEMPTS:
            LOG.warning("The attach of volume %s to %s was cast to compute %s %d times "
                        "without reaching it; the compute's reconciliation rolls it back",
                        current.volume_id, current.instance_uuid, host, cast)
            return False
        LOG.warning("The attach of volume %s to %s has not reached compute %s after %d s; "
                    "casting it again", current.volume_id, current.instance_uuid, host,
                    self.conf.compute.attachment_reservation_timeout + 1)
        self.compute.attach_volume(context, host=host, instance=instance.to_dict(),
                                   bdm=current.to_dict(), multiattach=multiattach,
                                   event_started=True, recovered=True)
        self.add(context, host=host, bdm=current.to_dict(), multiattach=multiattach,
                 cast=cast + 1)
        return True
