"""Server side of the compute RPC interface: host-local work only.

The compute holds no database credentials. It reads and writes its state
through the conductor and does what only this host can do: libvirt domains,
disk XML, the volume connector and Cinder attachment work. Work on one
instance is serialized by a per-instance lock.
"""

import contextlib
import threading

import oslo_messaging as messaging
from oslo_concurrency import lockutils
from oslo_log import log as logging
from oslo_utils import timeutils

from volumesvc import context as vs_context
from volumesvc import exception, keymgr, periodic, servicegroup
from volumesvc.compute import attach as attach_mod
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import (
    console_output,
    reconcile_runner,
    rpcapi,
    snapshots,
    started_work,
    teardown,
)
from volumesvc.compute import evacuate as evacuate_mod
from volumesvc.compute import events as events_mod
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import lifecycle as lifecycle_mod
from volumesvc.compute import live_migration as live_migration_mod
from volumesvc.compute import rebuild as rebuild_mod
from volumesvc.compute import reporter as compute_reporter
from volumesvc.compute import resize as resize_mod
from volumesvc.compute import swap as swap_mod
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import power_state, task_states, vm_states
from volumesvc.virt import configdrive
from volumesvc.volume import cleanup

# The tasks of a build on this compute (``build_and_run_instance``).
BUILD_TASKS = (task_states.BLOCK_DEVICE_MAPPING, task_states.SPAWNING)

LOG = logging.getLogger(__name__)


_driver_instance = compute_instances.driver_instance


# started_work kind: a swap or rebuild this process was asked for (keyed by server).
TASK = "task"
# started_work kind: a delete the start-up pass finished (keyed by server).
DELETED = "deleted"


class ComputeManager:
    """RPC endpoint for topic ``compute``, server ``[DEFAULT] host``."""

    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, conf, *, driver, conductor, cinder, notifier, glance=None,
                 metrics=None, keys=None, peers=None):
        self._conf = conf
        self.host = conf.host
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.glance = glance
        self.reporter = compute_reporter.ComputeReporter(conductor, notifier, self.host,
                                                         metrics=metrics)
        #: the key manager adapter: encrypted volumes' keys, read as the user
        self.keys = keys or keymgr.KeyManager(conf)
        self.attacher = attach_mod.VolumeAttacher(conf, driver, conductor, cinder,
                                                  keys=self.keys)
        self.events = events_mod.ExternalEvents(conf, driver, conductor, cinder,
                                                self.reporter, keys=self.keys)
        self.lifecycle = lifecycle_mod.Lifecycle(conf, driver=driver, conductor=conductor,
                                                 cinder=cinder, reporter=self.reporter,
                                                 glance=glance, keys=self.keys)
        self.snapshots = snapshots.AssistedSnapshots(driver, conductor, cinder)
        self.swapper = swap_mod.VolumeSwapper(conf, driver, conductor, cinder, self.reporter,
                                              keys=self.keys)
        self.waiters = events_mod.EventWaiters()
        # Attaches and detaches started by this process (replays of recovered requests).
        self.started = started_work.StartedWork()
        self.rebuilder = rebuild_mod.Rebuilder(self.lifecycle, self.waiters)
        #: live migration; ``peers``: the compute rpcapi, to reach other hosts
        self.migrator = live_migration_mod.LiveMigrator(conf, driver, conductor, cinder, peers,
                                                        self.reporter, keys=self.keys)
        #: cold migration and resize
        self.resizer = resize_mod.Resizer(conf, driver=driver, conductor=conductor,
                                          cinder=cinder, peers=peers, reporter=self.reporter,
                                          lifecycle=self.lifecycle, glance=glance,
                                          keys=self.keys)
        #: evacuation: this host as the destination, and as the old host back
        self.evacuator = evacuate_mod.Evacuator(conf, driver, conductor, cinder, self.reporter,
                                                keys=self.keys, lock=self._lock)
        limit = conf.compute.max_concurrent_builds
        self._build_slots = (threading.BoundedSemaphore(limit) if limit
                             else contextlib.nullcontext())
        # What a dead process of this compute left in a task, ended at start.
        interrupted = {task_states.SWAPPING_VOLUME: self._dead_task(self.swapper.recover),
                       **dict.fromkeys(rebuild_mod.REBUILD_TASKS,
                                       self._dead_task(self._recover_rebuild)),
                       **dict.fromkeys(BUILD_TASKS, self._end_dead_build),
                       task_states.UNSHELVING: self._end_dead_unshelve,
                       task_states.DELETING: self._delete_again,
                       # As Nova at start: a power or shelve step a dead process left
                       # is done again (its task state is still the one it expects).
                       task_states.POWERING_OFF: self.lifecycle.stop,
                       task_states.POWERING_ON: self.lifecycle.start,
                       task_states.SHELVING: self._shelve_again,
                       task_states.SHELVING_OFFLOADING: self.lifecycle.offload,
                       task_states.MIGRATING: self._dead_task(self.migrator.recover),
                       **dict.fromkeys(resize_mod.TASKS,
                                       self._dead_task(self.resizer.recover))}
        self.reconciler = reconcile_runner.ReconcileRunner(
            conf, host=self.host, driver=driver, conductor=conductor, cinder=cinder,
            attacher=self.attacher, reporter=self.reporter, lock=self._lock,
            driver_instance=_driver_instance, metrics=metrics, interrupted=interrupted,
            keys=self.keys, extender=self.events)

    def _dead_task(self, recover):
        """``recover`` for a server whose task this process was never asked for.

        The start-up pass runs again from a watch when no conductor
        answered at first; by then a swap or rebuild cast to this process
        may be waiting for the instance lock, and its task is not a dead
        process's to end.
        """
        def recover_if_dead(context, instance):
            if started_work.StartedWork.key(TASK, instance["uuid"]) in self.started:
                return
            recover(context, instance)
        return recover_if_dead

    def _recover_rebuild(self, context, instance):
        """A dead rebuild ends ERROR; a server being evacuated away is not a rebuild here."""
        if self.evacuator.evacuating_away(context, instance["uuid"]):
            return
        self.rebuilder.recover(context, instance)

    def _own_task(self, instance):
        self.started.start(started_work.StartedWork.key(TASK, instance["uuid"]))

    # -- process lifecycle ---------------------------------------------------

    def init_host(self):
        """Connect the virt driver, then recover interrupted work.

        Called once before the RPC server starts, so a swap or a rebuild
        this compute was running when it died is rolled back or ended, and
        an attach finished or rolled back, before any new work arrives
        (``compute/reconcile_runner.py``).
        """
        self.driver.init_host(self.host)
        context = vs_context.get_admin_context()
        # Servers evacuated away while this host was down go before anything
        # looks at the domains; then evacuations a dead process of this host
        # left half done as their destination.
        self.evacuator.recover(context, timeout=self._conf.report_interval)
        self.reconciler.run(reconcile_runner.Occasion.START, context,
                            timeout=self._conf.report_interval)
        self.migrator.recover_switched(context)
        self.resizer.recover_destination(context, self._lock)

    def serving(self, context):
        """Tell every conductor this compute takes its queue now (best effort).

        Why: attaches a killed predecessor had taken from the queue died
        with it; the conductors that cast them cast them again at once
        (``conductor/attach_watch.py``) rather than after ``[compute]
        attachment_reservation_timeout``. A conductor that cannot be told
        still casts them at that time.
        """
        try:
            self.conductor.compute_started(context, host=self.host)
        except Exception as exc:  # noqa: BLE001 - a hint; the watch's own time remains
            LOG.warning("Could not tell the conductors that compute %s started: %s",
                        self.host, exc)

    def cleanup_host(self):
        self.reconciler.stop()
        self.driver.cleanup_host()

    def capabilities(self):
        """What this host can do, its size (memory_mb, vcpus) and zone, for the service record.

        The zone travels inside the capabilities so that the heartbeat's RPC
        signature stays as it is: a conductor that predates zones stores it
        as one more capability, a newer one sets the record's zone from it.
        """
        return dict(self.driver.capabilities, **self.driver.host_resources(),
                    **{servicegroup.ZONE_CAPABILITY: self._conf.default_availability_zone})

    def ping(self, context):
        return {"host": self.host, "capabilities": self.capabilities()}

    def get_domain_xml(self, context, *, instance_uuid):
        """The domain as libvirt reports it now ('' when there is none)."""
        return self.driver.get_domain_xml({"uuid": instance_uuid})

    @messaging.expected_exceptions(exception.InstanceNotFound,
                                   exception.ConsoleNotAvailable)
    def get_console_output(self, context, *, instance, tail_length=None):
        """The last ``tail_length`` lines of the guest's console log.

        No instance lock: a read of a log QEMU keeps writing, which must not
        wait behind a long attach on the same server.
        """
        output = self.driver.get_console_output(_driver_instance(instance))
        return console_output.tail_text(output, tail_length)

    def _lock(self, instance_uuid):
        # NOTE: the host in the name: a live migration's source holds its lock
        # while the destination takes its own, and tests run both in one process.
        return lockutils.lock(f"{self.host}-instance-{instance_uuid}")

    def _update(self, context, instance_uuid, values, expected=None):
        return compute_instances.update_instance(self.conductor, context, instance_uuid, values,
                                             expected)

    # -- build -----------------------------------------------------------------

    def build_and_run_instance(self, context, *, instance, bdms, request_spec):
        """Create and attach the volumes, then define and start the domain.

        Any failure puts the instance in ERROR with a fault and undoes the
        volume work (see ``BootVolumes.rollback``): nothing leaks in Cinder.
        """
        uuid = instance["uuid"]
        # The build's own list: each volume step puts the BDM as saved in it.
        bdms = bdm_mod.from_wire_list(bdms)
        # NOTE: the turn first, then the instance lock: a delete of a server
        # still waiting for its turn must not wait behind it.
        with self._build_slots, self._lock(uuid):
            self.reporter.notify(context, instance, "create", "start", bdms=bdms)
            volumes = boot_volumes.BootVolumes(self._conf, self.cinder, self.conductor,
                                               self.driver, context, instance, self.glance,
                                               keys=self.keys)
            try:
                with self.reporter.event(context, uuid, "compute_build_and_run_instance"):
                    self._update(context, uuid, {"task_state": task_states.BLOCK_DEVICE_MAPPING},
                                 expected=[task_states.SCHEDULING])
                    volumes.create_volumes(bdms)
                    bdi = volumes.connect(bdms)
                    values = {"task_state": task_states.SPAWNING,
                              "root_device_name": bdi["root_device_name"]}
                    values.update(self._config_drive_values(instance))
                    self._update(context, uuid, values,
                                 expected=[task_states.BLOCK_DEVICE_MAPPING])
                    instance = dict(instance, **values)
                    self.driver.spawn(_driver_instance(instance), bdi)
                    volumes.complete(bdms)
                    instance = self._update(
                        context, uuid,
                        {"vm_state": vm_states.ACTIVE, "task_state": None,
                         "power_state": power_state.RUNNING,
                         "launched_at": timeutils.utcnow().isoformat()},
                        expected=[task_states.SPAWNING])
            except exception.UnexpectedTaskStateError as exc:
                # Deleted (or otherwise taken over) while building: undo, no ERROR.
                LOG.info("Build of %s interrupted: %s", uuid, exc.format_message())
                self._undo_build(context, instance, volumes, bdms)
                return
            except Exception as exc:  # noqa: BLE001 - a cast reports through the DB
                LOG.exception("Build of instance %s failed", uuid)
                self._undo_build(context, instance, volumes, bdms)
                self.reporter.fault(context, uuid, exc)
                try:
                    instance = self._update(context, uuid, {"vm_state": vm_states.ERROR,
                                                            "task_state": None})
                except exception.InstanceNotFound:
                    return
                self.reporter.notify(context, instance, "create", "error", bdms=bdms, exc=exc)
                return
            self.reporter.notify(context, instance, "create", "end", bdms=bdms)

    def _end_dead_build(self, context, instance):
        """End a build a dead process of this compute left: ERROR with a fault, as Nova at start.

        Called by the start-up reconciliation with the instance lock held,
        which a build of this process holds from its first task state to
        its last, so the build seen here is a dead one's. It stayed BUILD
        for ever before. Nothing is resumed: how far it got is not
        recorded, so what it did is undone as after a failed build: the
        domain destroyed, the Cinder attachments deleted (the volumes
        ``available``, the BDMs without one), where before a root volume
        stayed ``attaching`` for ever. ``spawning`` is also an unshelve's
        task; an unshelve is not a build and is undone as an unshelve.
        """
        if instance.get("vm_state") != vm_states.BUILDING:
            self._end_dead_unshelve(context, instance)
            return
        uuid = instance["uuid"]
        failure = exception.BuildInterrupted(instance_uuid=uuid, host=self.host,
                                             task_state=instance.get("task_state"))
        try:
            updated = self._update(context, uuid, {"vm_state": vm_states.ERROR,
                                                   "task_state": None,
                                                   "power_state": power_state.NOSTATE},
                                   expected=list(BUILD_TASKS))
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            return
        LOG.warning("Instance %s was building (%s) when this compute stopped; it is now ERROR",
                    uuid, instance.get("task_state"))
        bdms = bdm_mod.listed(self.conductor, context, uuid)
        volumes = boot_volumes.BootVolumes(self._conf, self.cinder, self.conductor,
                                           self.driver, context, instance, self.glance,
                                           keys=self.keys)
        try:
            self._undo_build(context, instance, volumes, bdms)
        except Exception as exc:  # noqa: BLE001 - the server is ERROR either way
            LOG.warning("Could not undo the interrupted build of %s: %s", uuid, exc)
        self.reporter.fault(context, uuid, failure)
        self.reporter.notify(context, updated or instance, "create", "error", exc=failure)

    def _end_dead_unshelve(self, context, instance):
        """An unshelve a dead process left (``unshelving``, or ``spawning`` when offloaded).

        A server shelved on this host (never offloaded) is simply started
        again, as a power step is done again; one offloaded is put back
        offloaded (``Lifecycle.end_dead_unshelve``): its attachments are
        half way to this host, which a second try cannot pick up safely.
        """
        vm_state = instance.get("vm_state")
        if vm_state == vm_states.SHELVED and instance.get("task_state") == \
                task_states.UNSHELVING:
            self.lifecycle.unshelve(context, instance, [])
        elif vm_state == vm_states.SHELVED_OFFLOADED:
            self.lifecycle.end_dead_unshelve(context, instance)

    def _shelve_again(self, context, instance):
        """A shelve a dead process left, offloaded as the conductor would have asked."""
        self.lifecycle.shelve(context, instance, offload=self._conf.shelved_offload_time == 0)

    def _config_drive_values(self, instance):
        """``config_drive: "True"`` for a server that gets a drive it did not ask for.

        As Nova, decided once, at build: ``[DEFAULT] force_config_drive`` or
        an image that makes it mandatory. The server then shows it, and every
        later definition of its domain (which looks only at the server's own
        ``config_drive``) keeps the drive, whatever the option says by then.
        """
        if instance.get("config_drive") or not configdrive.required(
                self._conf.force_config_drive, instance):
            return {}
        return {"config_drive": "True"}

    def _undo_build(self, context, instance, volumes, bdms):
        try:
            self.driver.destroy(_driver_instance(instance))
        except Exception as exc:  # noqa: BLE001 - release the volumes anyway
            LOG.warning("Could not destroy domain of %s: %s", instance["uuid"], exc)
        volumes.rollback(bdms)

    # -- delete ----------------------------------------------------------------

    def terminate_instance(self, context, *, instance, bdms):
        """Destroy the domain, release the volumes, then delete the record."""
        uuid = instance["uuid"]
        bdms = bdm_mod.from_wire_list(bdms)
        with self._lock(uuid):
            if started_work.StartedWork.key(DELETED, uuid) in self.started:
                # The cast waited in the queue while this compute was down;
                # its start-up pass finished the delete (_delete_again).
                LOG.info("Delete of %s already finished at start; duplicate skipped", uuid)
                return
            if any(b.is_volume and b.attachment_id and not b.has_connection for b in bdms):
                # Read before an attach's one report (after Cinder's
                # attachment_complete): its connection is recorded now.
                bdms = bdm_mod.listed(self.conductor, context, uuid)
            self._terminate(context, instance, bdms)

    def _delete_again(self, context, instance):
        """Finish a delete a dead process of this compute left, as Nova does at start.

        Called by the start-up reconciliation with the instance lock held.
        The compute died while it took the server apart (the cast is gone
        with it), so the server stayed ``deleting`` for ever, its domain
        defined and both Cinder attachments held. The delete's steps are
        each safe to run again: destroying a domain that is gone, releasing
        attachments Cinder no longer has. The delete cast may also still
        wait in this compute's queue (sent while it was down): it is
        skipped once this pass has deleted the server.
        """
        uuid = instance["uuid"]
        LOG.warning("Instance %s was being deleted when this compute stopped; deleting it "
                    "again", uuid)
        bdms = bdm_mod.listed(self.conductor, context, uuid)
        if self._terminate(context, instance, bdms):
            self.started.start(started_work.StartedWork.key(DELETED, uuid))

    def _terminate(self, context, instance, bdms):
        """The delete's steps (instance lock held); True once the record is gone."""
        uuid = instance["uuid"]
        self.reporter.notify(context, instance, "delete", "start", bdms=bdms)
        try:
            with self.reporter.event(context, uuid, "compute_terminate_instance"):
                teardown.destroy_on_host(context, driver=self.driver,
                                         attacher=self.attacher, instance=instance,
                                         bdms=bdms)
                cleanup.release_instance(
                    self.cinder, context.elevated(), uuid, bdm_mod.to_wire_list(bdms),
                    timeout=self._conf.compute.volume_wait_timeout,
                    page_size=self._conf.cinder.list_page_size)
                boot_volumes.remove_instance_dir(self._conf, uuid)
                self.conductor.instance_destroy(context, instance_uuid=uuid)
        except exception.InstanceNotFound:
            return True
        except Exception as exc:  # noqa: BLE001
            LOG.exception("Delete of instance %s failed", uuid)
            self.reporter.fault(context, uuid, exc)
            self._update(context, uuid, {"vm_state": vm_states.ERROR, "task_state": None})
            return False
        self.reporter.notify(context, dict(instance, vm_state=vm_states.DELETED), "delete",
                             "end", bdms=bdms)
        return True

    # -- reboot ----------------------------------------------------------------

    def reboot_instance(self, context, *, instance, reboot_type):
        """SOFT or HARD reboot; a failure leaves the server ERROR with a fault."""
        uuid = instance["uuid"]
        hard = reboot_type == "HARD"
        requested, pending, started = task_states.reboot_steps(hard)
        with self._lock(uuid):
            try:
                with self.reporter.event(context, uuid, "compute_reboot_instance"):
                    self._update(context, uuid, {"task_state": pending},
                                 expected=[requested])
                    bdms = bdm_mod.listed(self.conductor, context, uuid)
                    # Dangling attachments leave before the disks are rebuilt (contract §10).
                    report, = self.reconciler.run(reconcile_runner.Occasion.REBOOT, context,
                                                  [instance], bdms=bdms)
                    bdms = report.remaining(bdms)
                    if hard:
                        bdms = boot_volumes.reconnect(self.driver, self.conductor, context,
                                                      bdms, self.keys)
                    bdi = boot_volumes.block_device_info(bdms)
                    self._update(context, uuid, {"task_state": started}, expected=[pending])
                    self.driver.reboot(_driver_instance(instance), bdi, reboot_type)
                    self._update(context, uuid, {"vm_state": vm_states.ACTIVE, "task_state": None,
                                                 "power_state": power_state.RUNNING},
                                 expected=[started])
            except exception.InstanceNotFound:
                return
            except Exception as exc:  # noqa: BLE001
                LOG.exception("Reboot of instance %s failed", uuid)
                self.reporter.fault(context, uuid, exc)
                self._update(context, uuid, {"vm_state": vm_states.ERROR, "task_state": None})

    # -- stop/start, shelve/offload/unshelve (compute/lifecycle.py) ---------

    def stop_instance(self, context, *, instance):
        with self._lock(instance["uuid"]):
            self.lifecycle.stop(context, instance)

    def start_instance(self, context, *, instance):
        with self._lock(instance["uuid"]):
            self.lifecycle.start(context, instance)

    def shelve_instance(self, context, *, instance, offload):
        with self._lock(instance["uuid"]):
            self.lifecycle.shelve(context, instance, offload=offload)

    def shelve_offload_instance(self, context, *, instance):
        with self._lock(instance["uuid"]):
            self.lifecycle.offload(context, instance)

    def unshelve_instance(self, context, *, instance, bdms):
        with self._lock(instance["uuid"]):
            self.lifecycle.unshelve(context, instance, bdm_mod.from_wire_list(bdms))

    # -- volume attachments ------------------------------------------------------

    def _first_start(self, context, kind, instance_uuid, bdm, recovered):
        """The BDM to work on, or None when this work was started before (caller holds
        the instance lock).

        ``recovered``: re-read the BDM first; a replay of work that
        settled meanwhile has nothing to do (``compute/started_work.py``).
        """
        key = self.started.key(kind, bdm.uuid, context.request_id)
        if key in self.started:
            LOG.info("%s of volume %s to %s (BDM %s) already started here; duplicate "
                     "skipped", kind.capitalize(), bdm.volume_id, instance_uuid, bdm.uuid)
            return None
        if recovered:
            bdm = started_work.recovered_bdm(self.conductor, context, kind, instance_uuid, bdm)
            if bdm is None:
                return None
        self.started.start(key)
        return bdm

    def attach_volume(self, context, *, instance, bdm, multiattach=None, event_started=False,
                      recovered=False):
        """``event_started``: the conductor started compute_attach_volume.

        ``recovered``: a re-run whose first conductor died; skipped
        when the BDM is gone or attached, and a disk the domain already has
        is not attached twice.
        """
        uuid = instance["uuid"]
        with self._lock(uuid):
            bdm = self._first_start(context, started_work.ATTACH, uuid,
                                    bdm_mod.BDM.from_wire(bdm), recovered)
            if bdm is None:
                return
            self.reporter.notify(context, instance, "volume_attach", "start",
                                 bdms=[bdm])
            try:
                with self.reporter.event(context, uuid, "compute_attach_volume",
                                         started=event_started) as event:
                    self.attacher.attach(context, _driver_instance(instance), bdm,
                                         multiattach=multiattach, resume=recovered,
                                         event=event)
            except Exception as exc:  # noqa: BLE001 - a cast reports through the DB
                LOG.warning("Attach of volume %s to %s failed: %s", bdm.volume_id,
                            uuid, compute_reporter.message_of(exc))
                self.reporter.notify(context, instance, "volume_attach", "error",
                                     bdms=[bdm], exc=exc)
                return
            self.reporter.notify(context, instance, "volume_attach", "end",
                                 bdms=[bdm])

    def detach_volume(self, context, *, instance, bdm, attachment_id, recovered=False):
        """``recovered``: a re-run whose first conductor died; skipped when the
        BDM is gone."""
        uuid = instance["uuid"]
        with self._lock(uuid):
            bdm = self._first_start(context, started_work.DETACH, uuid,
                                    bdm_mod.BDM.from_wire(bdm), recovered)
            if bdm is not None and not recovered:
                # Read again: a detach accepted before the attach's one report
                # (which comes after Cinder's attachment_complete) has its
                # connection recorded now, and one cast while this compute was
                # down may have been finished by its start-up pass already
                # (compute/reconcile.py), its BDM gone.
                bdm = started_work.recovered_bdm(self.conductor, context,
                                                 started_work.DETACH, uuid, bdm)
            if bdm is None:
                return
            self.reporter.notify(context, instance, "volume_detach", "start",
                                 bdms=[bdm])
            try:
                with self.reporter.event(context, uuid, "compute_detach_volume"):
                    self.attacher.detach(context, _driver_instance(instance), bdm,
                                         attachment_id)
            except Exception as exc:  # noqa: BLE001
                LOG.warning("Detach of volume %s from %s failed: %s", bdm.volume_id,
                            uuid, compute_reporter.message_of(exc))
                self.attacher.detach_failed(context, bdm, exc)
                self.reporter.notify(context, instance, "volume_detach", "error",
                                     bdms=[bdm], exc=exc)
                return
            self.reporter.notify(context, instance, "volume_detach", "end",
                                 bdms=[bdm])

    # -- external events ------------------------------------------------------

    def external_instance_event(self, context, *, instance, events):
        """Events the API accepted for this instance (see ``compute/events.py``).

        An event a workflow waits for (``volume-reimaged`` during a rebuild)
        is handed over without the instance lock: the waiting rebuild holds it.
        One that comes when no rebuild waits (it failed, timed out or died
        with an earlier process) means Cinder let go of the root volume: the
        reconciliation connects it here again (``compute/reconcile.py``).
        """
        events = [e for e in events if not self.waiters.deliver(instance["uuid"], e)]
        if not events:
            return
        with self._lock(instance["uuid"]):
            self.events.handle(context, instance, _driver_instance(instance), events)
        if any(e.get("name") == events_mod.VOLUME_REIMAGED for e in events):
            self.reconciler.watch(instance["uuid"], 0)
    # -- dangling attachments ---------------------------------------------------

    @periodic.periodic_task("compute", "dangling_attachment_reconcile_interval")
    def _reconcile_dangling_attachments(self, context):
        """Reconcile this host's idle servers with Cinder (off unless configured)."""
        self.reconciler.run(reconcile_runner.Occasion.PERIODIC, context)

    def reconcile_volume_attachments(self, context, *, instances, dry_run=False,
                                     attachments=None, available_volume_ids=None):
        """Reconcile BDMs and Cinder attachments of ``instances``; one report each.

        ``attachments``/``available_volume_ids``: a listing the caller made
        once for many servers (None: each server lists its own).
        """
        reports = self.reconciler.run(
            reconcile_runner.Occasion.REQUEST, context, instances, dry_run=dry_run,
            attachments=attachments, available_volume_ids=available_volume_ids)
        return [report.to_dict() for report in reports]

    # -- domains of deleted servers ----------------------------------------------

    @periodic.periodic_task(None, "running_deleted_instance_poll_interval")
    def _cleanup_running_deleted_instances(self, context):
        """Apply ``running_deleted_instance_action`` to domains of deleted servers.

        A server deleted by the conductor while this compute only looked
        down leaves its domain running here (``compute/running_deleted.py``).
        """
        self.reconciler.run(reconcile_runner.Occasion.RUNNING_DELETED, context)

    # -- assisted volume snapshots ------------------------------------------

    def volume_snapshot_create(self, context, *, instance, volume_id, create_info):
        with self._lock(instance["uuid"]):
            self.snapshots.create(context, _driver_instance(instance), volume_id, create_info)

    def volume_snapshot_delete(self, context, *, instance, volume_id, snapshot_id,
                               delete_info):
        with self._lock(instance["uuid"]):
            self.snapshots.delete(context, _driver_instance(instance), volume_id,
                                  snapshot_id, delete_info)

    # -- swap volume -----------------------------------------------------

    def swap_volume(self, context, *, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        """Copy the disk onto the new volume (``compute/swap.py``); failures are reported there."""
        self._own_task(instance)
        with self._lock(instance["uuid"]):
            try:
                self.swapper.swap(context, instance, old_volume_id=old_volume_id,
                                  new_volume_id=new_volume_id,
                                  new_attachment_id=new_attachment_id)
            except Exception:  # noqa: BLE001 - a cast: the event and the log say why
                LOG.warning("Swap of volume %s on %s failed", old_volume_id, instance["uuid"])

    # -- rebuild of a volume-backed server ---------------------------------

    def rebuild_instance(self, context, *, instance, image_ref, reimage,
                         preserve_ephemeral=False):
        """Recreate the domain from the root volume (``compute/rebuild.py``)."""
        self._own_task(instance)
        with self._lock(instance["uuid"]):
            self.rebuilder.rebuild(context, instance, image_ref=image_ref, reimage=reimage,
                                   preserve_ephemeral=preserve_ephemeral)

    # -- live migration (compute/live_migration.py) ----------------------------

    def live_migration(self, context, *, instance, migration):
        with self._lock(instance["uuid"]):
            self._own_task(instance)
            self.migrator.migrate(context, instance, migration)

    def live_migration_control(self, context, *, instance_uuid, migration_id, request):
        # NOTE: no instance lock: the move this is for holds it.
        self.migrator.control(migration_id, request)

    @messaging.expected_exceptions(exception.VolumesvcException)
    def pre_live_migration(self, context, *, instance, bdms, migration):
        with self._lock(instance["uuid"]):
            return self.migrator.pre_live_migration(context, instance,
                                                    bdm_mod.from_wire_list(bdms), migration)

    def rollback_live_migration_at_destination(self, context, *, instance, volumes,
                                               source_instance_dir=None):
        with self._lock(instance["uuid"]):
            self.migrator.rollback_at_destination(context, instance, volumes,
                                                  source_instance_dir=source_instance_dir)

    def post_live_migration_at_destination(self, context, *, instance):
        with self._lock(instance["uuid"]):
            return self.migrator.post_at_destination(context, instance)

    # -- cold migration and resize (compute/resize.py) -------------------------

    def resize_instance(self, context, *, instance, migration):
        with self._lock(instance["uuid"]):
            self._own_task(instance)
            self.resizer.resize_instance(context, instance, migration)

    def finish_resize(self, context, *, instance, migration):
        with self._lock(instance["uuid"]):
            self._own_task(instance)
            self.resizer.finish_resize(context, instance, migration)

    def revert_resize(self, context, *, instance, migration):
        with self._lock(instance["uuid"]):
            self._own_task(instance)
            self.resizer.revert_resize(context, instance, migration)

    def finish_revert_resize(self, context, *, instance, migration, outcome):
        with self._lock(instance["uuid"]):
            self._own_task(instance)
            self.resizer.put_back(context, instance["uuid"], migration, outcome=outcome)

    def confirm_resize(self, context, *, instance, migration):
        with self._lock(instance["uuid"]):
            self.resizer.confirm_resize(context, instance, migration)

    # -- evacuation (compute/evacuate.py) ----------------------------------------

    def evacuate_instance(self, context, *, instance, migration, target_state=None):
        with self._lock(instance["uuid"]):
            self._own_task(instance)
            self.evacuator.evacuate(context, instance, migration, target_state=target_state)
