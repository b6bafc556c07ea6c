"""The host side of stop/start and shelve/offload/unshelve.

Each operation runs from a conductor cast under the manager's per-instance
lock and reports as the other compute work does: an instance action event
``compute_<method>``, versioned notifications ``instance.<name>.start|end|
error`` and, on failure, an instance fault. The task_state moves with a
compare-and-swap on the one the API (or the previous step) set, so a server
deleted meanwhile is left to the delete.

Volumes and the three places that must agree about them (BDM, Cinder
attachment, domain disk):

* stop keeps every attachment and the domain definition (attach while
  stopped edits it); start redefines the domain from the BDMs, so the disks
  are exactly the BDMs'.
* offload destroys the domain and *disconnects* every volume: a new Cinder
  attachment without a connector replaces the connected one (Cinder cannot
  drop a connector from an attachment). The new one is made and recorded
  in the BDM before the old one is deleted, so the volume is attached to the
  server in Cinder at every moment.
* unshelve connects every volume BDM with this host's connector (including
  volumes attached while offloaded, which have no device name yet), spawns
  the domain with all of them and completes the attachments. Any failure
  destroys the domain, disconnects again the same way, and puts the server
  back to ``SHELVED_OFFLOADED`` without a host: no attachment is lost. An
  unshelve whose compute died is undone the same way when the compute starts
  again (:meth:`Lifecycle.end_dead_unshelve`).
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from volumesvc import exception
from volumesvc.common import outage
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import connections
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import reporter as compute_reporter
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import power_state, task_states, vm_states
from volumesvc.virt import block_device as virt_bd

LOG = logging.getLogger(__name__)


# What a server shelved offloaded is (after an offload, and after an
# unshelve that failed or died): no host, no power, no task.
OFFLOADED = {"vm_state": vm_states.SHELVED_OFFLOADED, "task_state": None,
             "power_state": power_state.NOSTATE, "host": None, "node": None}


class Lifecycle:
    """Stop, start, shelve, offload and unshelve on one compute host."""

    def __init__(self, conf, *, driver, conductor, cinder, reporter, glance=None, keys=None):
        self.conf = conf
        self.keys = keys  # the key manager adapter (encrypted volumes)
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.reporter = reporter
        self.glance = glance
        # A BDM's switch to its new attachment is asked again while no
        # conductor answers (``Patience.record``): it only sets values.
        self.patience = outage.Patience(conf.compute.database_outage_wait)

    def _update(self, context, uuid, values, expected=None):
        return compute_instances.update_instance(self.conductor, context, uuid, values, expected)

    def run(self, context, instance, *, name, event, work, on_error, undo=None):
        """Run ``work(bdms) -> instance`` with the event, notifications and fault.

        On failure ``undo(bdms)`` runs first (best effort), then the fault
        is recorded and ``on_error`` (instance values) saved. A server whose
        task_state moved on (deleted meanwhile) or that is gone is left alone.
        """
        uuid = instance["uuid"]
        bdms = bdm_mod.listed(self.conductor, context, uuid)
        self.reporter.notify(context, instance, name, "start", bdms=bdms)
        try:
            with self.reporter.event(context, uuid, event):
                instance = work(bdms)
        except (exception.InstanceNotFound, exception.UnexpectedTaskStateError) as exc:
            LOG.info("%s of %s interrupted: %s", name, uuid, compute_reporter.message_of(exc))
            return None
        except Exception as exc:  # noqa: BLE001 - a cast reports through the DB
            LOG.exception("%s of instance %s failed", name, uuid)
            if undo is not None:
                undo(bdms)
            self.reporter.fault(context, uuid, exc)
            try:
                instance = self._update(context, uuid, on_error)
            except exception.InstanceNotFound:
                return None
            self.reporter.notify(context, instance, name, "error", bdms=bdms, exc=exc)
            return None
        self.reporter.notify(context, instance, name, "end", bdms=bdms)
        return instance

    # -- stop / start -------------------------------------------------------------

    def stop(self, context, instance):
        """Power off; the server stays as it was (task cleared) if that fails."""
        def work(bdms):
            self.driver.power_off(compute_instances.driver_instance(instance))
            return self._update(context, instance["uuid"], {
                "vm_state": vm_states.STOPPED, "task_state": None,
                "power_state": power_state.SHUTDOWN}, expected=[task_states.POWERING_OFF])
        return self.run(context, instance, name="power_off", event="compute_stop_instance",
                         work=work, on_error={"task_state": None})

    def start(self, context, instance):
        """Connect the volumes again, redefine the domain from the BDMs and start it."""
        def work(bdms):
            bdms = boot_volumes.reconnect(self.driver, self.conductor, context, bdms,
                                          self.keys)
            self.driver.power_on(compute_instances.driver_instance(instance),
                                 boot_volumes.block_device_info(bdms))
            return self._update(context, instance["uuid"], {
                "vm_state": vm_states.ACTIVE, "task_state": None,
                "power_state": power_state.RUNNING}, expected=[task_states.POWERING_ON])
        return self.run(context, instance, name="power_on", event="compute_start_instance",
                         work=work, on_error={"task_state": None})

    # -- shelve / offload ---------------------------------------------------------

    def shelve(self, context, instance, *, offload):
        """Power off and mark shelved; with ``offload`` go straight on to offload."""
        uuid = instance["uuid"]

        def work(bdms):
            self.driver.power_off(compute_instances.driver_instance(instance))
            values = {"vm_state": vm_states.SHELVED, "power_state": power_state.SHUTDOWN,
                      "task_state": task_states.SHELVING_OFFLOADING if offload else None}
            return self._update(context, uuid, values, expected=[task_states.SHELVING])
        shelved = self.run(context, instance, name="shelve", event="compute_shelve_instance",
                            work=work, on_error={"task_state": None})
        if shelved is not None and offload:
            return self.offload(context, shelved)
        return shelved

    def offload(self, context, instance):
        """Destroy the domain, disconnect every volume, forget the host.

        A failure leaves the server ``SHELVED`` (task cleared) with a fault;
        each volume is then either still connected or already disconnected,
        and attached in Cinder either way.
        """
        uuid = instance["uuid"]

        def work(bdms):
            self.driver.destroy(compute_instances.driver_instance(instance),
                                boot_volumes.block_device_info(bdms))
            self.disconnect_volumes(context, uuid, bdms)
            boot_volumes.remove_instance_dir(self.conf, uuid)
            return self._update(context, uuid, dict(OFFLOADED),
                                expected=[task_states.SHELVING_OFFLOADING])
        return self.run(context, instance, name="shelve_offload",
                         event="compute_shelve_offload_instance", work=work,
                         on_error={"task_state": None})

    def disconnect_volumes(self, context, uuid, bdms, *, settle=False):
        """Swap each volume's connected attachment for one without a connector.

        First the host side goes, as at a detach (os-brick's connection, an
        encrypted volume's libvirt secret or dm-crypt mapping; kept while
        another server here shares the volume): before, an offloaded server
        left them all on the host. Then the new attachment is created and
        saved in the BDM before the old one is deleted: at every moment
        Cinder has the volume attached to the server, whatever fails. The
        BDM forgets its connection_info (it named this host's connection).
        Every volume is tried; the first failure is raised afterwards.

        ``settle`` (after a failed unshelve) completes each old attachment
        first: Cinder refuses a new reservation while a volume is still
        ``attaching`` (connected but not completed), but allows it, for the
        same server, once the volume is ``in-use`` or ``reserved``.
        """
        first_error = None
        for bdm in boot_volumes.volume_bdms(bdms):
            old = bdm.attachment_id
            if not bdm.volume_id or not old:
                continue
            try:
                if bdm.has_connection:
                    connections.disconnect(
                        context, cinder=self.cinder, conductor=self.conductor,
                        driver=self.driver, host=self.conf.host, instance_uuid=uuid,
                        connection_info=bdm.connection_info)
                if settle:
                    self.cinder.attachment_complete(context, old)
                new = self.cinder.attachment_create(context, bdm.volume_id, uuid,
                                                    mode=virt_bd.attach_mode(bdm))["id"]
                values = {"attachment_id": new, "connection_info": None}
                bdm = bdm_mod.replace_in(bdms, bdm, bdm.replace(**values))
                self.patience.repeat(
                    f"switch volume {bdm.volume_id} to attachment {new}",
                    self.conductor.bdm_update, context, bdm_uuid=bdm.uuid, values=values)
                self.cinder.attachment_delete(context.elevated(), old)
            except Exception as exc:  # noqa: BLE001 - disconnect the others too
                LOG.warning("Could not disconnect volume %s of %s: %s", bdm.volume_id,
                            uuid, compute_reporter.message_of(exc))
                first_error = first_error or exc
        if first_error is not None:
            raise first_error

    # -- unshelve -----------------------------------------------------------------

    def unshelve(self, context, instance, bdms):
        """Connect the volumes here, spawn, complete; on failure back to offloaded.

        A ``SHELVED`` server (never offloaded) still has its domain and its
        connections on this host: it is simply started again.
        """
        uuid = instance["uuid"]
        if instance.get("vm_state") == vm_states.SHELVED:
            return self._unshelve_in_place(context, instance)
        volumes = boot_volumes.BootVolumes(self.conf, self.cinder, self.conductor,
                                           self.driver, context, instance, self.glance,
                                           keys=self.keys)

        def work(_bdms):
            bdi = volumes.connect(bdms)
            self._update(context, uuid, {"task_state": task_states.SPAWNING,
                                         "root_device_name": bdi["root_device_name"]},
                         expected=[task_states.UNSHELVING])
            self.driver.spawn(compute_instances.driver_instance(instance), bdi)
            volumes.complete(bdms)
            return self._update(context, uuid, {
                "vm_state": vm_states.ACTIVE, "task_state": None,
                "power_state": power_state.RUNNING,
                "launched_at": timeutils.utcnow().isoformat()},
                expected=[task_states.SPAWNING])

        def undo(_bdms):
            self._undo_unshelve(context, instance, bdms)

        return self.run(context, instance, name="unshelve",
                         event="compute_unshelve_instance", work=work, undo=undo,
                         on_error=dict(OFFLOADED))

    def end_dead_unshelve(self, context, instance):
        """Undo an unshelve a dead process of this compute left; the server offloaded again.

        Called by the start-up reconciliation with the instance lock held.
        The server stayed ``SHELVED_OFFLOADED`` in task ``unshelving`` or
        ``spawning`` for ever, its root volume ``attaching`` (connected here,
        never completed). How far the unshelve got is not recorded, so it is
        undone as a failed one is: no domain and no connection here, each
        volume still attached to the server in Cinder with an attachment
        without a connector, the server back without a host and with a fault
        saying why, so that a new unshelve can start from there.
        """
        uuid = instance["uuid"]
        task = instance.get("task_state")
        LOG.warning("Instance %s was being unshelved (%s) when this compute stopped; "
                    "undoing it", uuid, task)
        failure = exception.UnshelveInterrupted(instance_uuid=uuid, host=self.conf.host,
                                                task_state=task)
        bdms = bdm_mod.listed(self.conductor, context, uuid)
        self._undo_unshelve(context, instance, bdms)
        self.reporter.fault(context, uuid, failure)
        try:
            updated = self._update(context, uuid, dict(OFFLOADED),
                                   expected=[task_states.UNSHELVING, task_states.SPAWNING])
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            return
        self.reporter.notify(context, updated or instance, "unshelve", "error", bdms=bdms,
                             exc=failure)

    def _unshelve_in_place(self, context, instance):
        """Start a ``SHELVED`` server again on its host.

        A volume an interrupted offload already disconnected (no
        connection_info) is connected again first, so the domain gets every
        BDM's disk.
        """
        def work(bdms):
            bdms = boot_volumes.reconnect(self.driver, self.conductor, context, bdms,
                                          self.keys)
            bdi = boot_volumes.block_device_info(bdms)
            volumes = boot_volumes.BootVolumes(self.conf, self.cinder, self.conductor,
                                               self.driver, context, instance, self.glance,
                                               keys=self.keys)
            partial = any(not b.has_connection for b in boot_volumes.volume_bdms(bdms))
            if partial:
                bdi = volumes.connect(bdms)
            self.driver.power_on(compute_instances.driver_instance(instance), bdi)
            if partial:
                volumes.complete(bdms)
            return self._update(context, instance["uuid"], {
                "vm_state": vm_states.ACTIVE, "task_state": None,
                "power_state": power_state.RUNNING}, expected=[task_states.UNSHELVING])
        return self.run(context, instance, name="unshelve",
                         event="compute_unshelve_instance", work=work,
                         on_error={"task_state": None})

    def _undo_unshelve(self, context, instance, bdms):
        """No domain, no connection on this host; every volume stays attached."""
        uuid = instance["uuid"]
        try:
            self.driver.destroy(compute_instances.driver_instance(instance))
        except Exception as exc:  # noqa: BLE001 - disconnect the volumes anyway
            LOG.warning("Could not destroy the domain of %s: %s", uuid, exc)
        try:
            self.disconnect_volumes(context, uuid, bdms, settle=True)
        except Exception as exc:  # noqa: BLE001 - the fault says what failed first
            LOG.warning("Could not disconnect every volume of %s after a failed "
                        "unshelve: %s", uuid, exc)
