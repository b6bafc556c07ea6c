"""Accepted attach and detach requests: claimed, settled, and recovered when lost.

From API 2.101 an attach is answered 202 once it is cast, and a detach
always is; the message bus forgets a cast as soon as a conductor takes it.
The API therefore records each such request (``objects/volume_request.py``)
and this module makes sure one conductor carries it through:

* the conductor that receives the cast claims the row (compare and swap:
  a duplicate delivery, or a cast that arrives after its recovery, finds it
  taken and does nothing), runs the task and deletes the row once the task
  has settled, in success or after its rollback;
* every conductor periodically re-runs the rows no live conductor owns:
  unclaimed for longer than ``[conductor] volume_request_grace`` (the cast
  was lost), claimed by a conductor whose service is down, or claimed by
  this conductor's own host before this process started (its killed
  predecessor: a SIGKILLed conductor that is started again recovers its
  requests at once). A re-run goes on from what the first run left
  (``conductor/tasks/resume.py``);
* a request whose task failed because the database was unreachable, or
  whose row could not be deleted afterwards, is run again by the next pass
  of the same conductor: its outcome may not be recorded anywhere;
* a request started ``[conductor] volume_request_max_attempts`` times
  without settling is given up and recorded as failed, so nothing stays
  stuck and a request that kills its conductor is not retried forever.

NOTE: a conductor's ``[DEFAULT] host`` must be its own: two running
conductors with one host name would take each other's requests for a
predecessor's.
"""

import threading

from oslo_log import log as logging

from volumesvc import binaries, exception, servicegroup
from volumesvc import context as vs_context
from volumesvc.common.outage import database_down
from volumesvc.conductor.tasks import attach as attach_task
from volumesvc.conductor.tasks import detach as detach_task
from volumesvc.objects import base
from volumesvc.objects import service as service_obj
from volumesvc.objects import volume_request as request_obj

LOG = logging.getLogger(__name__)

# Requests re-run per pass, oldest first; the rest wait for the next pass.
BATCH = 50
# Seconds between the start of a conductor and its first recovery pass:
# its RPC servers start right after ``init_host``.
STARTUP_DELAY = 2.0
# What a stored attach request may hand the task (the API's cast kwargs).
_ATTACH_PARAMS = ("instance_uuid", "volume_id", "device", "disk_bus", "device_type", "tag",
                  "delete_on_termination", "multiattach", "read_only")


class VolumeRequests:
    """The requests of one conductor process (its manager owns one)."""

    def __init__(self, deps):
        """``deps``: the conductor's ``TaskDeps``, which the tasks it re-runs are built with."""
        self.deps = deps
        self.conf = deps.conf
        self.db = deps.db
        self.compute = deps.compute
        self.cinder = deps.cinder
        self.host = deps.conf.host
        # Claims made by this host before this moment are a dead process's.
        self.started_at = base.utcnow()
        # Requests this process claimed whose outcome may be unrecorded (the
        # database went away): the next pass runs them again.
        self._owed: set[str] = set()
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self._thread = None

    # -- the cast arrived -----------------------------------------------------

    def run_cast(self, context, request_uuid, work):
        """Claim ``request_uuid`` and run ``work()``; None when it is not ours to run."""
        if request_obj.claim(self.db, context, request_uuid, self.host) is None:
            LOG.debug("Volume request %s is run by another conductor or done; "
                      "this delivery does nothing", request_uuid)
            return None
        try:
            result = work()
        except Exception as exc:
            self._settle(context, request_uuid, retry=database_down(exc))
            raise
        self._settle(context, request_uuid)
        return result

    def _settle(self, context, request_uuid, retry=False):
        """Forget a settled request, or keep it for the next pass when it may not be."""
        if not retry:
            try:
                request_obj.delete(self.db, context, request_uuid)
                return
            except Exception as exc:  # noqa: BLE001 - kept and run again instead
                LOG.warning("Could not delete settled volume request %s: %s",
                            request_uuid, exc)
        LOG.warning("Volume request %s is run again by the next recovery pass: the "
                    "database was unreachable while it ran or settled", request_uuid)
        with self._guard:
            self._owed.add(request_uuid)

    # -- recovery -------------------------------------------------------------

    def start(self):
        """Recover this host's predecessor's requests soon after the start."""
        self._thread = threading.Thread(target=self._startup_pass, daemon=True,
                                        name="volume-request-recovery")
        self._thread.start()

    def stop(self):
        self._stopping.set()

    def _startup_pass(self):
        if self._stopping.wait(STARTUP_DELAY):
            return
        try:
            self.recover(vs_context.get_admin_context())
        except Exception:  # noqa: BLE001 - the periodic pass tries again
            LOG.exception("Recovering volume requests at start failed")

    def recover(self, context) -> int:
        """One pass: re-run (or give up) every request no live conductor owns.

        Returns how many were taken over by this conductor.
        """
        taken = self._run_owed(context)
        requests = request_obj.list_recoverable(
            self.db, context, grace=self.conf.conductor.volume_request_grace,
            dead_hosts=self._dead_hosts(context), host=self.host,
            started_at=self.started_at, limit=BATCH)
        for request in requests:
            if self._stopping.is_set():
                break
            if self._recover_one(context, request):
                taken += 1
        return taken

    def _run_owed(self, context) -> int:
        with self._guard:
            owed = sorted(self._owed)
        taken = 0
        for request_uuid in owed:
            request = request_obj.get_by_uuid(self.db, context, request_uuid)
            with self._guard:
                self._owed.discard(request_uuid)
            if request is not None and self._recover_one(context, request):
                taken += 1
        return taken

    def _dead_hosts(self, context) -> set[str]:
        """Claiming hosts whose conductor service is down (or has no record)."""
        hosts = request_obj.claimers(self.db, context) - {self.host}
        if not hosts:
            return set()
        services = {s.host: s for s in service_obj.list_services(
            self.db, context, binary=binaries.CONDUCTOR)}
        return {host for host in hosts
                if host not in services or not servicegroup.is_up(self.conf, services[host])}

    def _recover_one(self, context, request) -> bool:
        claimed = request_obj.reclaim(self.db, context, request, self.host)
        if claimed is None:
            return False  # another conductor took it over first
        limit = self.conf.conductor.volume_request_max_attempts
        # The request's own id in the log lines of its recovery (and in the
        # calls it makes); the pass's context again once it is settled.
        claimed.request_context().update_store()
        LOG.warning("Recovering the %s of volume %s to server %s (request %s accepted at %s, "
                    "claimed by %s; start %d of at most %d)", claimed.kind, claimed.volume_id,
                    claimed.instance_uuid, claimed.uuid, claimed.created_at,
                    request.claimed_by or "no conductor", claimed.attempts, limit)
        retry = False
        try:
            if claimed.attempts > limit:
                self.give_up(claimed)
            else:
                self.rerun(claimed)
        except exception.VolumesvcException as exc:
            LOG.warning("Recovered %s of volume %s to %s failed: %s", claimed.kind,
                        claimed.volume_id, claimed.instance_uuid, exc.format_message())
        except Exception as exc:  # noqa: BLE001 - the task recorded it; the pass goes on
            retry = database_down(exc)
            LOG.exception("Recovered %s of volume %s to %s failed", claimed.kind,
                          claimed.volume_id, claimed.instance_uuid)
        context.update_store()
        self._settle(context, claimed.uuid, retry=retry)
        return True

    def rerun(self, request):
        """Run a claimed request again, from where its first run stopped."""
        context = request.request_context()
        self._task(request, context).execute()

    def _task(self, request, context):
        """The request's task, as a re-run (``recovered=True``)."""
        if request.kind == request_obj.ATTACH:
            return attach_task.AttachTask(
                self.deps, context, recovered=True, since=request.created_at,
                **{key: value for key, value in request.params.items()
                   if key in _ATTACH_PARAMS})
        return detach_task.DetachTask(
            self.deps, context, instance_uuid=request.instance_uuid,
            volume_id=request.volume_id, attachment_id=request.params.get("attachment_id"),
            recovered=True)

    def give_up(self, request):
        """Record a request that kept losing its conductor as failed (and undo it)."""
        context = request.request_context()
        exc = exception.VolumeRequestAbandoned(kind=request.kind, volume_id=request.volume_id,
                                               attempts=request.attempts - 1)
        LOG.error("Giving up the %s of volume %s to server %s (request %s): %s",
                  request.kind, request.volume_id, request.instance_uuid, request.uuid,
                  exc.format_message())
        self._task(request, context).give_up(exc)
