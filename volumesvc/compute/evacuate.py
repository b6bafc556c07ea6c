"""Evacuation, the computes' part: the destination takes over, the old host lets go.

The destination (cast ``evacuate_instance``, under the instance lock, the
server in task ``rebuilding``, the migration ``pre-migrating``):

1. takes the move (``running``: a compare and swap, so a cast that arrives
   after this compute's restart ended the move does nothing) and saves the
   dead host's connection of each volume in the migration
   (``source_connections``) before it changes anything: only the old host
   can drop those connections, and only once it is back;
2. gives each volume a Cinder attachment for the server made with this
   host's connector (``attachment_create`` with the connector: Cinder
   refuses ``attachment_update`` with a second connector on a volume that
   is not multiattach), records it in the migration as soon as Cinder
   answers, switches the BDM to it (attachment id and connection info) and
   deletes the old attachment (Cinder needs nothing of the dead host for
   that);
3. connects the volumes (an encrypted one with its key), defines and starts
   the domain (powered off again for a server that ends ``STOPPED``),
   completes the attachments and, in one write, makes the server this
   host's: host and node, vm_state (the one it had, or ``STOPPED``), task
   ended, migration ``done``.

A failure undoes what was made here: the domain destroyed, the volumes
disconnected, each volume left with exactly one attachment of the server
(a reserved one without a connector, as a shelve-offload leaves it); the
server is ``ERROR`` with a fault, still on the old host, and the migration
``failed``: an admin may evacuate it again. A destination killed midway is
settled the same way by its next start (:meth:`Evacuator.recover_destination`).

The old host, when it starts again (:meth:`Evacuator.recover_source`,
before anything else looks at its domains), destroys the domain of each
server evacuated away (``done``), disconnects the saved connections (a
multiattach volume another server here still uses stays connected; an
encrypted volume's secret goes with its connection), deletes any Cinder
attachment of the server that no BDM names and sets the migration
``completed``. A server whose evacuation is still running elsewhere only
loses its domain here: its guest must never start twice on the same
volumes.
"""

import threading

from oslo_log import log as logging

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.common import outage
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import connections, encryption
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import migration_states, power_state, task_states, vm_states
from volumesvc.virt import block_device as virt_bd

LOG = logging.getLogger(__name__)

EVENT = "compute_evacuate_instance"
# The old host's cleanup works on these; a running one only loses its domain.
_SETTLED = (migration_states.DONE,)
_UNSETTLED = migration_states.EVACUATION_IN_PROGRESS


class EvacuationFailed(exception.VolumesvcException):
    msg_fmt = "Evacuation of instance %(instance_uuid)s failed: %(reason)s"


class Evacuator:
    """One per compute process: the destination's steps and the old host's cleanup."""

    def __init__(self, conf, driver, conductor, cinder, reporter, *, keys, lock):
        self.conf = conf
        self.host = conf.host
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.reporter = reporter
        self.keys = keys
        self._lock = lock  # the manager's per-instance lock
        self._taken = set()  # ids of the evacuations this process took
        # The destination's calls are asked again while no conductor answers
        # (``Patience``): an evacuation is not given up, its server left
        # ``ERROR`` on a dead host, because one conductor died.
        self.patience = outage.Patience(conf.compute.database_outage_wait)

    def _save(self, context, migration, values, expected=None):
        return self.conductor.migration_update(
            context, migration_id=migration["id"], values=values, expected_status=expected)

    # -- the destination ---------------------------------------------------------

    def evacuate(self, context, instance, migration, target_state=None):
        """Take the server over (the steps above); the outcome is in the records."""
        uuid = instance["uuid"]
        if migration["id"] in self._taken:
            LOG.info("Evacuation %s of %s is taken already here", migration["uuid"], uuid)
            return
        migration = compute_instances.take_move(
            self.patience, self.conductor, context, migration,
            expected=[migration_states.PRE_MIGRATING], status=migration_states.RUNNING)
        if migration is None:
            return
        connected: dict = {}
        self._taken.add(migration["id"])
        try:
            with self.reporter.event(context, uuid, EVENT):
                self._take_over(context, instance, migration, target_state, connected)
        except Exception as exc:  # noqa: BLE001 - reported in the records
            LOG.warning("Evacuation %s of %s to %s failed: %s", migration["uuid"], uuid,
                        self.host, exc)
            self._fail(context, instance, migration, exc, connected)

    def _take_over(self, context, instance, migration, target_state, connected):
        uuid = instance["uuid"]
        bdms = self.patience.repeat(f"read the BDMs of {uuid}", bdm_mod.listed,
                                    self.conductor, context, uuid)
        volume_bdms = boot_volumes.volume_bdms(bdms)
        old = {b.volume_id: b.connection_info or {} for b in volume_bdms
               if b.has_connection}
        migration = self.patience.repeat(f"save the old connections of {uuid}", self._save,
                                         context, migration, {"source_connections": old})
        connector = self.driver.get_volume_connector()
        # Each switched BDM takes its place in both lists (the domain's disks below).
        volume_bdms = [self._switch(context, uuid, migration, bdms, bdm, connector)
                       for bdm in volume_bdms]
        for bdm in volume_bdms:
            info = bdm.connection_info or {}
            plan = encryption.prepare(context, cinder=self.cinder, keys=self.keys,
                                      driver=self.driver, connection_info=info)
            self.driver.connect_volume(info)
            connected[bdm.volume_id] = info
            encryption.open_volume(self.driver, info, plan)
            saved = bdm_mod.encode_connection_info(info)
            if saved != bdm.connection_info_json:
                bdm_mod.replace_in(bdms, bdm, bdm.replace(connection_info=saved))
                self.patience.repeat(f"save the connection of volume {bdm.volume_id}",
                                     self.conductor.bdm_update, context, bdm_uuid=bdm.uuid,
                                     values={"connection_info": saved})
        driver_instance = compute_instances.driver_instance(instance)
        self.driver.spawn(driver_instance, boot_volumes.block_device_info(bdms))
        stopped = (target_state or instance.get("vm_state")) == vm_states.STOPPED
        if stopped:
            self.driver.power_off(driver_instance)
        admin = context.elevated()
        for bdm in volume_bdms:
            self.cinder.attachment_complete(admin, bdm.attachment_id)
        self.patience.record(
            f"record that {uuid} runs on {self.host}", self.conductor.evacuation_finish,
            context, migration_id=migration["id"], values={
                "vm_state": vm_states.STOPPED if stopped else vm_states.ACTIVE,
                "power_state": power_state.SHUTDOWN if stopped else power_state.RUNNING},
            done=lambda: compute_instances.migration_reached(
                self.conductor, context, migration["id"],
                (migration_states.DONE, migration_states.COMPLETED)))
        LOG.info("Instance %s evacuated from %s to %s", uuid, migration["source_compute"],
                 self.host)

    def _switch(self, context, uuid, migration, bdms, bdm, connector):
        """A new attachment with this host's connector replaces the BDM's old one.

        Returns the BDM as saved, which also takes its place in ``bdms``.
        """
        admin = context.elevated()
        volume_id = bdm.volume_id
        attachment = self.cinder.attachment_create(
            admin, volume_id, uuid, connector=connector, mountpoint=bdm.device_name,
            mode=virt_bd.attach_mode(bdm))
        self.patience.repeat(f"record attachment {attachment['id']}",
                             self.conductor.migration_add_dest_attachment, context,
                             migration_id=migration["id"], volume_id=volume_id,
                             attachment_id=attachment["id"])
        info = dict(attachment.get("connection_info") or {})
        info["serial"] = volume_id
        virt_bd.keep_read_only(info, bdm)
        if self.cinder.get(admin, volume_id).get("multiattach"):
            info["multiattach"] = True
        self.driver.check_multiattach(info)
        previous = bdm.attachment_id
        values = {"attachment_id": attachment["id"],
                  "connection_info": bdm_mod.encode_connection_info(info)}
        self.patience.repeat(f"switch volume {volume_id} to attachment {attachment['id']}",
                             self.conductor.bdm_update, context, bdm_uuid=bdm.uuid,
                             values=values)
        switched = bdm_mod.replace_in(bdms, bdm, bdm.replace(**values))
        if previous:
            try:
                self.cinder.attachment_delete(admin, previous)
            except exception.VolumeAttachmentNotFound:
                pass
        return switched

    def _fail(self, context, instance, migration, exc, connected):
        """Undo here, then the server ``ERROR`` with a fault and the migration ``failed``."""
        uuid = instance["uuid"]
        self._undo(context, instance, migration, connected)
        try:
            compute_instances.update_instance(
                self.conductor, context, uuid,
                {"vm_state": vm_states.ERROR, "task_state": None,
                 "power_state": power_state.NOSTATE},
                expected=task_states.REBUILDING)
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound) as err:
            LOG.info("Instance %s left as it is after its failed evacuation: %s", uuid, err)
        else:
            self.reporter.fault(context, uuid, exc)
        try:
            self._save(context, migration, {"status": migration_states.FAILED},
                       expected=list(_UNSETTLED))
        except exception.VolumesvcException as err:
            LOG.warning("Migration %s not set to failed: %s", migration["id"], err)

    def _undo(self, context, instance, migration, connected):
        """No domain, nothing connected here; one attachment per volume, without a connector.

        ``connected``: volume id → the connection made here (None: after a
        restart, every volume whose BDM names an attachment made here).
        """
        uuid = instance["uuid"]
        try:
            self.driver.destroy(compute_instances.driver_instance(instance))
        except Exception as err:  # noqa: BLE001 - the volumes go anyway
            LOG.warning("Could not destroy the domain of %s here: %s", uuid, err)
        try:
            made = self.conductor.migration_get(
                context, migration_id=migration["id"]).get("dest_attachments") or {}
        except Exception as err:  # noqa: BLE001 - the reconciliation finds the rest
            LOG.warning("Could not read migration %s: %s", migration["id"], err)
            made = {}
        admin = context.elevated()
        for bdm in boot_volumes.volume_bdms(bdm_mod.listed(self.conductor, context, uuid)):
            volume_id = bdm.volume_id
            ours = made.get(volume_id)
            try:
                if ours and bdm.attachment_id == ours:
                    info = (connected.get(volume_id) if connected is not None
                            else bdm.connection_info or {})
                    if info:
                        connections.disconnect(
                            context, cinder=self.cinder, conductor=self.conductor,
                            driver=self.driver, host=self.host, instance_uuid=uuid,
                            connection_info=info)
                    self._reserve_again(context, uuid, bdm)
                elif ours:
                    # Made but not yet in the BDM: the BDM's attachment stays.
                    self.cinder.attachment_delete(admin, ours)
            except Exception as err:  # noqa: BLE001 - the next volume too
                LOG.warning("Could not undo the evacuation of volume %s of %s: %s",
                            volume_id, uuid, err)
        # A process killed between two steps of a volume may have left an
        # attachment nobody recorded, or the old one not yet deleted.
        try:
            self._delete_unnamed_attachments(context, uuid)
        except Exception as err:  # noqa: BLE001 - the reconciliation deletes them
            LOG.warning("Could not delete the stray attachments of %s: %s", uuid, err)

    def _reserve_again(self, context, uuid, bdm):
        """Swap the BDM's attachment (this host's) for one without a connector.

        Completed first: Cinder reserves another attachment of a volume for
        the same server only while the volume is ``in-use`` or ``reserved``.
        """
        admin = context.elevated()
        old = bdm.attachment_id
        self.cinder.attachment_complete(admin, old)
        new = self.cinder.attachment_create(admin, bdm.volume_id, uuid,
                                            mode=virt_bd.attach_mode(bdm))["id"]
        self.conductor.bdm_update(context, bdm_uuid=bdm.uuid,
                                  values={"attachment_id": new, "connection_info": None})
        self.cinder.attachment_delete(admin, old)

    def recover(self, context, timeout=None, *, retry=False):
        """At start: the old host's cleanup, then this host's own dead evacuations.

        ``timeout`` bounds each wait for a conductor, so a start with none
        answering is not held up; the whole pass is then tried again from a
        thread every ``timeout`` seconds until a conductor answers
        (``retry``: such a later pass, beside the RPC server).
        """
        try:
            self.recover_source(context, timeout=timeout)
            self.recover_destination(context, timeout=timeout, retry=retry)
        except Exception as exc:  # noqa: BLE001 - retried below
            delay = timeout or self.conf.report_interval
            LOG.warning("Could not settle the evacuations of %s (%s); trying again in %ss",
                        self.host, exc, delay)
            later = threading.Timer(delay, self.recover,
                                    args=(vs_context.get_admin_context(), timeout),
                                    kwargs={"retry": True})
            later.daemon = True
            later.start()

    def recover_destination(self, context, timeout=None, retry=False):
        """Settle the evacuations to this host a dead process of it left.

        Called at start, before the RPC server: no cast of this process can
        be running one. Each is failed as in :meth:`_fail`, with nothing
        known of what was connected (every volume switched to an attachment
        made here is disconnected); a cast still queued then finds the
        migration ended and does nothing. A ``retry`` (the RPC server is up)
        leaves ``pre-migrating`` ones alone: their cast may be on its way.
        """
        statuses = [migration_states.RUNNING]
        if not retry:
            statuses.append(migration_states.PRE_MIGRATING)
        for migration in self.conductor.migration_list_evacuations(
                context, dest_compute=self.host, timeout=timeout, statuses=statuses):
            uuid = migration["instance_uuid"]
            LOG.warning("Evacuation %s of %s to %s was interrupted (%s); undoing it",
                        migration["uuid"], uuid, self.host, migration["status"])
            exc = EvacuationFailed(instance_uuid=uuid,
                                   reason=f"the compute {self.host} stopped during it")
            try:
                with self._lock(uuid):
                    # Read again under the lock: a retry of this pass runs
                    # beside the RPC server, whose own evacuations are not dead.
                    migration = self.conductor.migration_get(context,
                                                             migration_id=migration["id"])
                    if migration["id"] in self._taken or migration["status"] not in statuses:
                        continue
                    instance = self.conductor.instance_get(context, instance_uuid=uuid)
                    self._fail(context, instance, migration, exc, None)
            except Exception as err:  # noqa: BLE001 - one server must not stop the others
                LOG.warning("Undoing evacuation %s of %s failed: %s", migration["uuid"],
                            uuid, err)

    # -- the old host back -----------------------------------------------------------

    def _list(self, context, **filters):
        try:
            return self.conductor.migration_list_evacuations(context, **filters)
        except Exception as exc:  # noqa: BLE001 - the next start tries again
            LOG.warning("Could not list the evacuations of %s: %s", self.host, exc)
            return []

    def evacuating_away(self, context, instance_uuid):
        """True while an evacuation of the server from this host is unsettled."""
        return bool(self._list(context, instance_uuid=instance_uuid, source_compute=self.host,
                               statuses=list(_UNSETTLED)))

    def recover_source(self, context, timeout=None):
        """Let go of the servers evacuated away from this host while it was down."""
        migrations = self.conductor.migration_list_evacuations(
            context, source_compute=self.host, statuses=list(_SETTLED + _UNSETTLED),
            timeout=timeout)
        failed = self.conductor.migration_list_evacuations(
            context, source_compute=self.host, statuses=[migration_states.FAILED],
            timeout=timeout)
        later = {m["instance_uuid"] for m in migrations}
        for uuid in dict.fromkeys(m["instance_uuid"] for m in failed):
            if uuid not in later:
                try:
                    with self._lock(uuid):
                        self._take_back(context, uuid,
                                        [m for m in failed if m["instance_uuid"] == uuid])
                except Exception as exc:  # noqa: BLE001 - one server must not stop the others
                    LOG.warning("Taking back server %s on %s after its failed evacuation "
                                "failed: %s", uuid, self.host, exc)
        for migration in migrations:
            uuid = migration["instance_uuid"]
            try:
                with self._lock(uuid):
                    self._let_go(context, migration, failed)
            except Exception as exc:  # noqa: BLE001 - one server must not stop the others
                LOG.warning("Cleaning up evacuated server %s on %s failed: %s", uuid,
                            self.host, exc)

    def _take_back(self, context, uuid, failed):
        """A server whose evacuation failed, still this host's: its volumes connected here.

        The failed try's undo left each volume with one attachment of the
        server without a connector, and the BDMs without a connection; the
        guest may even have kept running here (only the compute had died).
        Each such volume gets this host's connector and is connected (a
        connection this host kept is found again); the server stays
        ``ERROR`` with its fault, as in Nova, for the admin to reboot (hard)
        or to evacuate again. The connections the failed tries saved are
        this host's own again: forgotten, so a later evacuation does not
        drop them twice.
        """
        instance = self.conductor.instance_get(context, instance_uuid=uuid)
        if instance.get("host") != self.host or instance.get("task_state"):
            return
        bdms = bdm_mod.listed(self.conductor, context, uuid)
        admin = context.elevated()
        connector = self.driver.get_volume_connector()
        for bdm in boot_volumes.volume_bdms(bdms):
            if bdm.has_connection or not bdm.attachment_id:
                continue
            info = self.cinder.attachment_update(admin, bdm.attachment_id, connector,
                                                 mountpoint=bdm.device_name)
            info["serial"] = bdm.volume_id
            virt_bd.keep_read_only(info, bdm)
            if self.cinder.get(admin, bdm.volume_id).get("multiattach"):
                info["multiattach"] = True
            plan = encryption.prepare(context, cinder=self.cinder, keys=self.keys,
                                      driver=self.driver, connection_info=info)
            self.driver.connect_volume(info)
            encryption.open_volume(self.driver, info, plan)
            self.conductor.bdm_update(context, bdm_uuid=bdm.uuid, values={
                "connection_info": bdm_mod.encode_connection_info(info)})
            self.cinder.attachment_complete(admin, bdm.attachment_id)
            LOG.info("Volume %s of %s connected on %s again after its failed evacuation",
                     bdm.volume_id, uuid, self.host)
        for migration in failed:
            if migration.get("source_connections"):
                self._save(context, migration, {"source_connections": {}},
                           expected=[migration_states.FAILED])

    def _let_go(self, context, migration, failed):
        uuid = migration["instance_uuid"]
        # NOTE: the guest first, whatever the move's state: it must never run twice.
        self.driver.destroy(compute_instances.driver_instance({"uuid": uuid}))
        if migration["status"] not in _SETTLED:
            LOG.warning("Server %s is being evacuated away from %s (%s): its domain here "
                        "is destroyed, the rest is left to the evacuation", uuid, self.host,
                        migration["status"])
            return
        # A failed earlier try saved the connections this host had; a later
        # one found the BDMs without them.
        old: dict = {}
        for earlier in failed:
            if earlier["instance_uuid"] == uuid:
                old.update(earlier.get("source_connections") or {})
        old.update(migration.get("source_connections") or {})
        for volume_id, info in old.items():
            try:
                connections.disconnect(context, cinder=self.cinder, conductor=self.conductor,
                                       driver=self.driver, host=self.host,
                                       instance_uuid=uuid, connection_info=info)
            except Exception as exc:  # noqa: BLE001 - the next volume too
                LOG.warning("Could not disconnect volume %s of evacuated server %s from "
                            "%s: %s", volume_id, uuid, self.host, exc)
        self._delete_unnamed_attachments(context, uuid)
        self._save(context, migration, {"status": migration_states.COMPLETED},
                   expected=list(_SETTLED))
        LOG.info("Evacuation %s of %s completed: nothing of it is left on %s",
                 migration["uuid"], uuid, self.host)

    def _delete_unnamed_attachments(self, context, uuid):
        admin = context.elevated()
        try:
            named = {b.attachment_id for b in bdm_mod.listed(self.conductor, context, uuid)}
        except exception.InstanceNotFound:
            return
        for attachment in self.cinder.attachment_get_all(admin, instance_id=uuid,
                                                         all_tenants=True):
            if attachment["id"] not in named:
                try:
                    self.cinder.attachment_delete(admin, attachment["id"])
                except exception.VolumeAttachmentNotFound:
                    pass
