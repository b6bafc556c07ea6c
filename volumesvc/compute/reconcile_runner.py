"""When the compute reconciles volume attachments, and how it reports it.

``compute/reconcile.py`` decides and acts for one server; this module runs
it at the right moments, through one entry point,
``ReconcileRunner.run(occasion, context, servers)``, each server under its
instance lock and through the same steps (read, skip, plan and apply,
record); the occasions are:

* inside a reboot (SOFT and HARD), before the block-device info is built;
* on request (``volumesvc-manage volume_attachment cleanup``, through the
  conductor), for one server or a batch served by one Cinder listing;
* when the compute starts, before it takes new work: attaches this compute
  was running when it died are finished or rolled back, and first a server
  left in the task of a workflow that died with the process (a build, a
  swap, a rebuild, a power or shelve step, an unshelve, a delete) is handed
  to that workflow's ``recover`` (``interrupted``), which rolls it back,
  does it again or ends it, so the same pass finds it out of its task,
  and an extend Cinder still waits for (its ``volume-extended`` cast died
  with the process) is finished or completed with error
  (``ExternalEvents.resume_extend``); a detach the process died in is
  finished like an interrupted attach (``compute/reconcile.py``);
* from a *watch*: work of other services that the compute found in flight
  when it started (or a recovery that could not reach the conductor) is
  checked again once it would be stale, within ``[compute]
  attachment_reservation_timeout``, without an operator, a reboot or the
  (optional) periodic task. (An attach cast that never reached this
  compute is the conductor's to watch: ``conductor/attach_watch.py``.)

The same entry point runs the check for domains of deleted servers
(``compute/running_deleted.py``), which takes a reaped server apart with
the delete's own steps (``compute/teardown.py``).

Every change is logged and recorded as an instance action event (on the
``reboot`` action, the operator's action, or a new
``cleanup_volume_attachments`` action for work nobody asked for).
"""

import enum
import functools
import heapq
import threading
import time

from oslo_log import log as logging

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import encryption, reconcile, running_deleted
from volumesvc.states import vm_states
from volumesvc.volume import cinder as cinder_adapter
from volumesvc.volume import reconciliation

LOG = logging.getLogger(__name__)

# Server states whose volumes are left alone: their BDMs belong to a build
# (or a delete) that is still running or that failed before launching.
_NOT_LAUNCHED = frozenset({vm_states.BUILDING, vm_states.DELETED})
# A watch that keeps finding work in progress (or no Cinder) gives up after this many tries.
WATCH_ATTEMPTS = 5


def skip_reason(instance):
    """Why a server is not reconciled outside a reboot: (Reason, text), or None."""
    if instance.get("vm_state") in _NOT_LAUNCHED or not instance.get("launched_at"):
        return reconciliation.Reason.NOT_LAUNCHED, "server was never launched"
    if instance.get("task_state"):
        return reconciliation.Reason.IN_TASK, f"server is in task {instance['task_state']}"
    return None


def log_failure(exc, message, *args):
    """Log a pass that raised ``exc``; return its :class:`reconciliation.Reason`.

    A bug (no exception of ours, Cinder's or the bus's) is logged with its
    traceback: it will not go away by itself, so it is not retried either.
    """
    reason = reconciliation.reason_of(exc)
    if reason is reconciliation.Reason.BUG:
        LOG.exception(message + ": %s", *args, exc)
    else:
        LOG.warning(message + ": %s", *args, exc)
    return reason


class Occasion(enum.StrEnum):
    """Why the compute reconciles: the one argument that tells its entry points apart."""

    REBOOT = "reboot"                    # inside a reboot; the caller holds the lock
    REQUEST = "request"                  # volume_attachment cleanup, through the conductor
    START = "start"                      # the compute starts: interrupted work of a dead process
    WATCH = "watch"                      # a server (or the start) checked again later
    PERIODIC = "periodic"                # [compute] dangling_attachment_reconcile_interval
    RUNNING_DELETED = "running_deleted"  # domains of deleted servers (compute/running_deleted.py)


class ReconcileRunner:
    """The compute's one entry point into recovery, :meth:`run` (one per compute process).

    Each occasion chooses its servers and its Cinder view, then every server
    goes through the same steps (:meth:`_one`): read under its lock, skip
    what is not ours to touch, plan and apply (``compute/reconcile.py``,
    measured by :meth:`_apply`), record what changed.
    """

    def __init__(self, conf, *, host, driver, conductor, cinder, attacher, reporter,
                 lock, driver_instance, metrics=None, interrupted=None, keys=None,
                 extender=None):
        self.conf = conf
        #: ``compute/events.py``'s ExternalEvents: finishes extends a dead process left
        self._extender = extender
        #: task state -> recover(context, instance): ends what a dead process left
        self._interrupted = dict(interrupted or {})
        self.host = host
        self.conductor = conductor
        self.cinder = cinder
        self.reporter = reporter
        self._lock = lock
        self._driver_instance = driver_instance
        self.reconciler = reconcile.Reconciler(conf, driver=driver, conductor=conductor,
                                               cinder=cinder, attacher=attacher, keys=keys)
        self.reaper = running_deleted.RunningDeletedReaper(
            conf, host=host, driver=driver, conductor=conductor, cinder=cinder,
            attacher=attacher, lock=lock)
        self._metrics = metrics  # compute/metrics.py: counts, durations, removals
        self._watch = []          # heap of (due monotonic, instance uuid, attempt)
        self._watch_cond = threading.Condition()
        self._watch_thread = None
        self._stopping = False

    def run(self, occasion, context, servers=(), **options) -> list:
        """Reconcile for ``occasion``; one :class:`reconciliation.Report` per server.

        ``servers`` (instance dicts) for REBOOT, REQUEST and WATCH (uuids
        only); START and PERIODIC take this host's, RUNNING_DELETED its
        domains (and returns the uuids of the domains it acted on).
        ``options``: REBOOT ``bdms``; REQUEST ``dry_run``, ``attachments``,
        ``available_volume_ids``, ``action_exists``; START ``timeout``;
        WATCH ``attempt`` (each server, or the start-up pass for an empty
        uuid, runs with an admin context of its own).
        """
        occasion = Occasion(occasion)
        if occasion is Occasion.REBOOT:
            return [self._for_reboot(context, instance, options["bdms"])
                    for instance in servers]
        if occasion is Occasion.REQUEST:
            return self._on_request(context, servers, **options)
        if occasion is Occasion.START:
            return self._recover_host(context, **options)
        if occasion is Occasion.WATCH:
            return [r for r in (self._run_watch(uuid, options.get("attempt", 0))
                                for uuid in servers) if r is not None]
        if occasion is Occasion.PERIODIC:
            return self._periodic(context)
        return self.reaper.run(context)

    # -- the steps of one server -----------------------------------------------------
    def _one(self, context, instance, *, dry_run=False, view=None, recovering=False,
             action_exists=False):
        """Read, skip, plan and apply, record: one server, under its lock."""
        uuid = instance["uuid"]
        bdms = instance.get("bdms") if view is not None else None
        if bdms is not None:
            # The conductor's listing came with its wire dicts (conductor/tasks/reconcile.py).
            bdms = bdm_mod.from_wire_list(bdms)
        with self._lock(uuid):
            if bdms is None:
                # NOTE: read under the lock; a caller's listing comes with
                # BDMs the conductor read after it (see conductor/tasks/reconcile.py).
                try:
                    instance = self.conductor.instance_get(context, instance_uuid=uuid)
                except exception.InstanceNotFound:
                    return reconciliation.Report(instance_uuid=uuid, dry_run=dry_run,
                                                 skipped="server not found",
                                                 reason=reconciliation.Reason.NOT_FOUND)
            skip = skip_reason(instance)
            if instance.get("host") != self.host:
                skip = (reconciliation.Reason.OTHER_HOST,
                        f"server is on host {instance.get('host')}")
            if skip:
                return reconciliation.Report(instance_uuid=uuid, dry_run=dry_run,
                                             reason=skip[0], skipped=skip[1])
            view = view or self.reconciler.instance_view(context.elevated())
            report = self._apply(context, instance, view=view, bdms=bdms, dry_run=dry_run,
                                 recovering=recovering)
        if not dry_run:
            self._record(context, report, action_exists=action_exists)
        return report

    # -- reboot ---------------------------------------------------------------------
    def _for_reboot(self, context, instance, bdms):
        """Inside a reboot (lock held by the caller): the skip and read steps are the reboot's.

        Nothing here may fail the reboot: Cinder unreachable is a warning
        (doc/source/contributor/contract.rst §10), and any other error skips
        the cleanup with one (the report's ``remaining(bdms)`` is then all).
        """
        uuid = instance["uuid"]
        try:
            report = self._apply(context, instance,
                                 view=self.reconciler.instance_view(context.elevated()),
                                 bdms=bdms)
        except Exception as exc:  # noqa: BLE001 - the reboot goes on
            reason = log_failure(exc, "Dangling volume attachment cleanup of %s failed; "
                                 "rebooting with the BDMs as they are", uuid)
            return reconciliation.Report(instance_uuid=uuid, skipped=str(exc), reason=reason)
        self._record(context, report, action_exists=True)
        return report

    # -- on request ------------------------------------------------------------------
    def _on_request(self, context, instances, *, dry_run=False, attachments=None,
                    available_volume_ids=None, action_exists=False):
        """Each server asked for; one Cinder listing for all when ``attachments`` is given.

        A server in a task (other than one stuck for longer than the
        reservation timeout) is skipped, as is one that never launched.
        """
        if attachments is None:
            view = None
        else:
            view = reconciliation.SnapshotView(attachments, available_volume_ids or ())
        reports = [self._one(context, instance, dry_run=dry_run, view=view,
                             action_exists=action_exists) for instance in instances]
        if not dry_run:
            # A step that failed for a reason that goes away (a conductor
            # killed mid-call) is tried again by a watch, as after a start:
            # nothing else would come back to this server before the
            # periodic task, which is off by default.
            for report in reports:
                self._rewatch(report, 0)
        return reports

    def _apply(self, context, instance, **kwargs):
        """Plan and apply for one server (lock held); measured here, whatever the occasion."""
        started = time.monotonic()
        try:
            report, _remaining = self.reconciler.run(
                context, instance, self._driver_instance(instance), **kwargs)
        except Exception:
            if self._metrics is not None:
                self._metrics.reconcile_failed(started)
            raise
        if self._metrics is not None:
            self._metrics.reconciled(report, started)
        return report

    def _record(self, context, report, *, action_exists):
        if not report.changed or report.dry_run:
            return
        if not action_exists:
            try:
                self.conductor.action_start(
                    context, instance_uuid=report.instance_uuid, action=reconcile.ACTION,
                    request_id=context.request_id)
            except Exception as exc:  # noqa: BLE001 - the log line is there anyway
                LOG.warning("Could not record the cleanup of %s: %s", report.instance_uuid, exc)
                return
        result = "Error" if report.rolled_back or report.errors else "Success"
        self.reporter.record(context, report.instance_uuid, reconcile.EVENT, result=result,
                             details=report.summary()[:4000])

    # -- compute start ----------------------------------------------------------------
    def _recover_host(self, context, timeout=None):
        """Every server of this host (called before the RPC server starts).

        An attach this compute was running when it died (Cinder attachment
        ``attaching``) is finished or rolled back now; younger work of other
        services is watched until its reservation timeout. ``timeout``
        bounds the wait for a conductor: with none answering the compute
        starts anyway (nothing can send it work then) and retries from a
        watch.
        """
        try:
            instances = self.conductor.instance_list_by_host(context, host=self.host,
                                                             timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - try again once the conductor answers
            reason = log_failure(exc, "Could not list the servers of %s to recover "
                                 "interrupted volume attachments", self.host)
            if reason in reconciliation.RETRIED:
                LOG.info("Recovering the volume attachments of %s again in %ss",
                         self.host, self._retry_delay())
                self.watch(None, self._retry_delay())
            return []
        reports = []
        self._forget_orphaned_secrets(context, instances)
        extending = self._extending_volumes(context) if instances else set()
        for instance in instances:
            try:
                self._end_interrupted(context, instance)
                if extending:
                    self._finish_extends(context, instance, extending)
                report = self._one(context, instance, recovering=True)
            except Exception as exc:  # noqa: BLE001 - one server must not stop the others
                reason = log_failure(exc, "Recovering the volume attachments of %s failed",
                                     instance["uuid"])
                if reason in reconciliation.RETRIED:
                    self.watch(instance["uuid"], self._retry_delay())
                continue
            self._rewatch(report, 0)
            reports.append(report)
        return reports

    def _end_interrupted(self, context, instance):
        """Hand a server left in a task of a dead process to that workflow's ``recover``.

        Read again under the lock: work this process started since (a
        watch runs this again later) holds the lock until it is done.
        """
        if instance.get("task_state") not in self._interrupted:
            return
        uuid = instance["uuid"]
        with self._lock(uuid):
            instance = self.conductor.instance_get(context, instance_uuid=uuid)
            recover = self._interrupted.get(instance.get("task_state"))
            if recover is not None and instance.get("host") == self.host:
                recover(context, instance)

    def _extending_volumes(self, context):
        """Ids of the volumes Cinder keeps ``extending``, every project (one paged listing).

        Cinder unreachable: none now, and the start-up pass runs again from
        a watch, as when no conductor answered.
        """
        if self._extender is None:
            return set()
        try:
            return set(cinder_adapter.list_all(
                functools.partial(self.cinder.volume_id_page, context.elevated(),
                                  status="extending"),
                self.conf.cinder.list_page_size, key=lambda volume_id: volume_id))
        except Exception as exc:  # noqa: BLE001 - the attachments are recovered anyway
            reason = log_failure(exc, "Could not list the volumes Cinder keeps extending "
                                 "for %s", self.host)
            if reason in reconciliation.RETRIED:
                self.watch(None, self._retry_delay())
            return set()

    def _finish_extends(self, context, instance, extending):
        """Each of the server's volumes in ``extending`` whose extend waits for this compute.

        Under the instance lock, as the ``volume-extended`` event would
        have run. A failure is logged (the extend was completed with error
        when it could be); one that may go away (Cinder unreachable) runs
        the start-up pass again later.
        """
        uuid = instance["uuid"]
        with self._lock(uuid):
            volume_ids = {b.volume_id for b in bdm_mod.listed(self.conductor, context,
                                                              uuid)} & extending
            for volume_id in sorted(volume_ids):
                try:
                    self._extender.resume_extend(context, instance,
                                                 self._driver_instance(instance), volume_id)
                except Exception as exc:  # noqa: BLE001 - the other volumes go on
                    reason = log_failure(exc, "Finishing the interrupted extend of volume "
                                         "%s of %s failed", volume_id, uuid)
                    if reason in reconciliation.RETRIED:
                        self.watch(None, self._retry_delay())

    # -- periodic -----------------------------------------------------------------------
    def _periodic(self, context):
        """This host's idle servers; one Cinder listing serves all of them.

        Servers in a task (or never launched) are left for their own
        workflow. Cinder unreachable: skipped with a warning until next time.
        """
        on_host = self.conductor.instance_list_by_host(context, host=self.host)
        self._forget_orphaned_secrets(context, on_host)
        instances = [i for i in on_host if skip_reason(i) is None]
        if not instances:
            return []
        try:
            view = reconciliation.SnapshotView.fetch(self.cinder, context,
                                                self.conf.cinder.list_page_size)
        except (exception.CinderConnectionFailed, exception.CinderAPIError) as exc:
            LOG.warning("Cinder unreachable; periodic reconciliation of volume attachments "
                        "on %s skipped: %s", self.host, exc)
            return []
        reports = [self._one(context, instance, view=view) for instance in instances]
        changed = sum(1 for r in reports if r.changed)
        if changed:
            LOG.info("Periodic reconciliation of volume attachments changed %d of %d "
                     "servers on %s", changed, len(reports), self.host)
        return reports

    def _forget_orphaned_secrets(self, context, instances):
        """Encrypted volumes' secrets no server here uses go (compute/encryption.py)."""
        try:
            encryption.forget_orphaned_secrets(context, driver=self.reconciler.driver,
                                               conductor=self.conductor, instances=instances)
        except Exception as exc:  # noqa: BLE001 - the next pass tries again
            LOG.warning("Could not remove orphaned volume secrets on %s: %s", self.host, exc)

    # -- watches ------------------------------------------------------------------------
    def _retry_delay(self):
        return self.conf.compute.attachment_reservation_timeout + 1

    def watch(self, instance_uuid, delay, attempt=0):
        """Reconcile ``instance_uuid`` (None: the whole host) in ``delay`` seconds."""
        with self._watch_cond:
            if self._stopping:
                return
            heapq.heappush(self._watch, (time.monotonic() + delay, instance_uuid or "",
                                         attempt))
            if self._watch_thread is None:
                self._watch_thread = threading.Thread(
                    target=self._watch_loop, name="attachment-watch", daemon=True)
                self._watch_thread.start()
            self._watch_cond.notify()

    def _rewatch(self, report, attempt):
        if attempt + 1 >= WATCH_ATTEMPTS:
            return
        if report.retry:
            self.watch(report.instance_uuid, self._retry_delay(), attempt + 1)

    def _watch_loop(self):
        while True:
            with self._watch_cond:
                while not self._stopping and (
                        not self._watch or self._watch[0][0] > time.monotonic()):
                    timeout = self._watch[0][0] - time.monotonic() if self._watch else None
                    self._watch_cond.wait(timeout)
                if self._stopping:
                    return
                _due, uuid, attempt = heapq.heappop(self._watch)
            self.run(Occasion.WATCH, vs_context.get_admin_context(), [uuid], attempt=attempt)

    def _run_watch(self, uuid, attempt):
        """One watch that came due: a server, or (no uuid) the start-up pass again."""
        context = vs_context.get_admin_context()
        if not uuid:
            self._recover_host(context)
            return None
        try:
            report = self._one(context, {"uuid": uuid})
        except Exception as exc:  # noqa: BLE001 - a watch must never kill its thread
            reason = log_failure(exc, "Reconciling the volume attachments of %s failed", uuid)
            report = reconciliation.Report(instance_uuid=uuid, skipped=f"{reason}: {exc}",
                                           reason=reason)
        self._rewatch(report, attempt)
        return report

    def stop(self):
        with self._watch_cond:
            self._stopping = True
            self._watch_cond.notify_all()
