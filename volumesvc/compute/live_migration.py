"""Live migration, the computes' part: the source owns the move, the destination helps.

The source compute (cast ``live_migration``, under the instance lock, the
server in task ``migrating``):

1. calls the destination's ``pre_live_migration`` (``preparing``): it makes
   a second Cinder attachment of each volume for the server with its own
   connector, recording each in the migration row as soon as Cinder
   answers, connects the volumes (an encrypted one with its key, the
   libvirt secret defined there), and writes the guest's files (console
   log directory, config drive);
2. has libvirt move the running guest (``running``), reporting progress
   into the migration row and acting on an abort or force-complete
   (``virt/libvirt/migration.py``);
3. once the guest runs on the destination, switches the records in one
   transaction (server's host, each BDM's attachment and connection, task
   ended, ``post-migrating``), then lets the destination resume a paused
   guest, completes the new attachments, deletes the old ones, disconnects
   the volumes here (a multiattach volume stays connected while another
   server here uses it) and ends ``completed``.

Any failure before the guest left (including an abort) is rolled back:
the destination drops what it connected and any domain, the new
attachments are deleted, the server keeps running here, untouched, out of
its task, and the migration ends ``error`` (``cancelled`` for an abort).
After the guest left, only forward: what fails then is logged and left
to the dangling-attachment reconciliation, which finds an attachment no
BDM names.

A source that dies mid-move leaves the server in task ``migrating``;
:meth:`LiveMigrator.recover` settles it when that compute starts: forward
when the guest runs on the destination, back otherwise.
"""

import threading
import time

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.common import outage
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import connections, encryption
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import migration_states, task_states, vm_states
from volumesvc.virt import block_device as virt_bd
from volumesvc.virt.instance_path import instance_dir, remove_instance_dir

LOG = logging.getLogger(__name__)

EVENT = "compute_live_migration"
DEST_EVENT = "compute_pre_live_migration"
# Seconds between two progress writes (and reads of what the user asked).
PROGRESS_INTERVAL = 2.0


class _Control:
    """What the user asked of one running move (set by the control cast)."""

    def __init__(self):
        self.request = None
        self.wake = threading.Event()


class LiveMigrator:
    """One per compute process: the source's and the destination's steps."""

    def __init__(self, conf, driver, conductor, cinder, peers, reporter, *, keys):
        self.conf = conf
        self.host = conf.host
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.peers = peers  # the compute rpcapi, to reach the destination
        self.reporter = reporter
        self.keys = keys
        self._controls = {}  # migration id -> _Control
        # The writes after the guest moved are asked again while no
        # conductor answers (``Patience.record``).
        self.patience = outage.Patience(conf.compute.database_outage_wait)

    # -- the source ------------------------------------------------------------

    def control(self, migration_id, request):
        """The user's abort/force-complete for a move this process runs (else nothing)."""
        control = self._controls.get(migration_id)
        if control is not None:
            control.request = request
            control.wake.set()

    def _save(self, context, migration, values, expected=None):
        return self.conductor.migration_update(
            context, migration_id=migration["id"], values=values, expected_status=expected)

    def migrate(self, context, instance, migration):
        """Run the move (the source's steps above); the outcome is in the records."""
        uuid = instance["uuid"]
        migration = compute_instances.take_move(
            self.patience, self.conductor, context, migration,
            expected=[migration_states.QUEUED], status=migration_states.PREPARING)
        if migration is None:
            return
        control = self._controls[migration["id"]] = _Control()
        try:
            with self.reporter.event(context, uuid, EVENT):
                self._migrate(context, instance, migration, control)
        except Exception as exc:  # noqa: BLE001 - reported in the records
            LOG.warning("Live migration %s of %s failed: %s", migration["uuid"], uuid, exc)
        finally:
            self._controls.pop(migration["id"], None)

    def _migrate(self, context, instance, migration, control):
        uuid = instance["uuid"]
        bdms: list = []
        made: dict = {}
        volumes: dict = {}
        try:
            bdms = boot_volumes.volume_bdms(self.patience.repeat(
                f"read the BDMs of {uuid}", bdm_mod.listed, self.conductor, context, uuid))
            self._check_request(migration, control)
            target = self.peers.pre_live_migration(
                context, host=migration["dest_compute"], instance=instance,
                bdms=bdm_mod.to_wire_list(bdms), migration=migration)
            volumes = target.pop("volumes")
            made = target.pop("attachments")
            migration = self.patience.record(
                f"record live migration {migration['uuid']} running", self._save, context,
                migration, {"status": migration_states.RUNNING, "dest_connections": volumes},
                expected=[migration_states.PREPARING],
                done=lambda: compute_instances.migration_reached(
                    self.conductor, context, migration["id"], (migration_states.RUNNING,)))
            self._check_request(migration, control)
            self.driver.live_migration(
                compute_instances.driver_instance(instance), target, volumes,
                self._progress(context, migration, control))
        except Exception as exc:
            self._rollback(context, instance, migration, made, volumes, exc)
            raise
        self._finish(context, instance, migration, bdms, made, volumes, target)

    def _check_request(self, migration, control):
        if control.request == migration_states.ABORT or \
                migration.get("requested") == migration_states.ABORT:
            raise exception.LiveMigrationAborted(instance_uuid=migration["instance_uuid"],
                                                 reason="the user aborted it")

    def _progress(self, context, migration, control):
        """The driver's callback: write progress now and then, answer the user's request."""
        written = [0.0]
        requested: list = [None]

        def on_progress(fields):
            if control.request:
                return control.request
            now = time.monotonic()
            if now - written[0] >= PROGRESS_INTERVAL:
                written[0] = now
                try:
                    requested[0] = self._save(context, migration, fields).get("requested")
                except Exception as exc:  # noqa: BLE001 - progress is best effort
                    LOG.debug("Progress of migration %s not saved: %s", migration["id"], exc)
            return requested[0]
        return on_progress

    def _rollback(self, context, instance, migration, made, volumes, exc):
        """The guest still runs here: undo the destination's side and end the task."""
        uuid = instance["uuid"]
        dest = migration.get("dest_compute")
        try:
            self.peers.rollback_live_migration_at_destination(
                context, host=dest, instance=instance, volumes=volumes,
                source_instance_dir=instance_dir(self.conf, uuid))
        except Exception as err:  # noqa: BLE001 - the attachments go anyway
            LOG.warning("Rolling back live migration %s on %s failed: %s (its start "
                        "drops what is left)", migration["uuid"], dest, err)
        if not made:
            # The destination died while it made them: the row has each one.
            try:
                made = self.conductor.migration_get(
                    context, migration_id=migration["id"]).get("dest_attachments") or {}
            except Exception as err:  # noqa: BLE001 - the reconciliation deletes them
                LOG.warning("Could not read migration %s: %s", migration["id"], err)
        self._delete_dest_attachments(context, migration, made)
        # The server first: a client that sees the migration ended sees it free.
        compute_instances.update_instance(self.conductor, context, uuid, {"task_state": None},
                                          expected=task_states.MIGRATING)
        aborted = isinstance(exc, exception.LiveMigrationAborted)
        self._save(context, migration, {"status": migration_states.CANCELLED if aborted
                                        else migration_states.ERROR})

    def _delete_dest_attachments(self, context, migration, made):
        """Delete the destination's attachments ``made`` and forget them in the row.

        One that cannot be deleted now stays recorded; the reconciliation
        deletes it once the server is out of its task (no BDM names it).
        """
        admin = context.elevated()
        for volume_id, attachment_id in made.items():
            try:
                try:
                    self.cinder.attachment_delete(admin, attachment_id)
                except exception.VolumeAttachmentNotFound:
                    pass
                self.conductor.migration_add_dest_attachment(
                    context, migration_id=migration["id"], volume_id=volume_id,
                    attachment_id=None)
            except Exception as exc:  # noqa: BLE001 - the next one too
                LOG.warning("Could not delete attachment %s of the failed migration: %s",
                            attachment_id, exc)

    def _finish(self, context, instance, migration, bdms, made, volumes, target):
        """The guest runs on the destination: records first, then let go of this side."""
        uuid = instance["uuid"]
        switched = {b.uuid: {"attachment_id": made[b.volume_id],
                             "connection_info": bdm_mod.encode_connection_info(
                                 volumes[b.volume_id])}
                    for b in bdms if b.volume_id in volumes}
        migration = self.patience.record(
            f"record that {uuid} runs on {migration['dest_compute']}",
            self.conductor.live_migration_switch, context, migration_id=migration["id"],
            bdms=switched, done=lambda: compute_instances.migration_reached(
                self.conductor, context, migration["id"],
                (migration_states.POST_MIGRATING, migration_states.COMPLETED)))
        LOG.info("Instance %s now runs on %s", uuid, migration["dest_compute"])
        self._after_switch(context, instance, migration, bdms, made, target)

    def _after_switch(self, context, instance, migration, bdms, made, target):
        uuid = instance["uuid"]
        try:
            self.peers.post_live_migration_at_destination(
                context, host=migration["dest_compute"], instance=instance)
        except Exception as exc:  # noqa: BLE001 - the guest is there either way
            LOG.warning("The destination %s of %s did not confirm the guest: %s",
                        migration["dest_compute"], uuid, exc)
        admin = context.elevated()
        for attachment_id in made.values():
            try:
                self.cinder.attachment_complete(admin, attachment_id)
            except Exception as exc:  # noqa: BLE001
                LOG.warning("Completing attachment %s failed: %s", attachment_id, exc)
        self._release_source(context, uuid, bdms)
        self.driver.post_live_migration_at_source(compute_instances.driver_instance(instance))
        # NOTE: only when the destination said where its files are: hosts
        # sharing one instances directory share the guest's files too.
        if target.get("instance_dir") and target["instance_dir"] != instance_dir(self.conf,
                                                                                 uuid):
            remove_instance_dir(self.conf, uuid)
        self.patience.record(
            f"record live migration {migration['uuid']} completed", self._save, context,
            migration, {"status": migration_states.COMPLETED, "requested": None},
            done=lambda: compute_instances.migration_reached(
                self.conductor, context, migration["id"], (migration_states.COMPLETED,)))

    def _release_source(self, context, uuid, bdms):
        """Disconnect each volume here and delete its old attachment (errors logged only)."""
        admin = context.elevated()
        for bdm in bdms:
            info = bdm.connection_info or {}
            try:
                if info:
                    connections.disconnect(context, cinder=self.cinder,
                                           conductor=self.conductor, driver=self.driver,
                                           host=self.host, instance_uuid=uuid,
                                           connection_info=info)
            except Exception as exc:  # noqa: BLE001
                LOG.warning("Could not disconnect volume %s of %s from %s: %s",
                            bdm.volume_id, uuid, self.host, exc)
            if bdm.attachment_id:
                try:
                    self.cinder.attachment_delete(admin, bdm.attachment_id)
                except exception.VolumeAttachmentNotFound:
                    pass
                except Exception as exc:  # noqa: BLE001 - the reconciliation deletes it
                    LOG.warning("Could not delete the old attachment %s of %s: %s",
                                bdm.attachment_id, uuid, exc)

    # -- the destination ---------------------------------------------------------

    def pre_live_migration(self, context, instance, bdms, migration):
        """Attach and connect each volume here; the target for the source.

        Each volume gets a Cinder attachment for the server made with this
        host's connector (``attachment_create`` with the connector: Cinder
        refuses to connect a second attachment of a volume that is not
        multiattach by ``attachment_update``, its migration path is this
        one), recorded in the migration row as soon as Cinder answers.
        Returns ``pre_live_migration`` of the driver plus ``volumes`` (volume
        id → this host's connection info) and ``attachments`` (volume id →
        attachment id). A failure disconnects and deletes what was made here
        before it raises.
        """
        uuid = instance["uuid"]
        admin = context.elevated()
        connector = self.driver.get_volume_connector()
        volumes: dict = {}
        made: dict = {}
        mappings = []
        try:
            with self.reporter.event(context, uuid, DEST_EVENT):
                for bdm in bdms:
                    volume_id = bdm.volume_id
                    attachment = self.cinder.attachment_create(
                        admin, volume_id, uuid, connector=connector,
                        mountpoint=bdm.device_name, mode=virt_bd.attach_mode(bdm))
                    made[volume_id] = attachment["id"]
                    self.patience.repeat(
                        f"record attachment {attachment['id']}",
                        self.conductor.migration_add_dest_attachment, context,
                        migration_id=migration["id"], volume_id=volume_id,
                        attachment_id=attachment["id"])
                    info = dict(attachment.get("connection_info") or {})
                    info["serial"] = volume_id
                    virt_bd.keep_read_only(info, bdm)
                    if (bdm.connection_info or {}).get("multiattach"):
                        info["multiattach"] = True
                    self.driver.check_multiattach(info)
                    plan = encryption.prepare(context, cinder=self.cinder, keys=self.keys,
                                              driver=self.driver, connection_info=info)
                    self.driver.connect_volume(info)
                    volumes[volume_id] = info
                    encryption.open_volume(self.driver, info, plan)
                    mappings.append(bdm.replace(connection_info=info))
                target = self.driver.pre_live_migration(
                    compute_instances.driver_instance(instance),
                    boot_volumes.block_device_info(mappings))
        except Exception:
            self._disconnect_all(context, uuid, volumes)
            self._delete_dest_attachments(context, migration, made)
            raise
        target.update(volumes=volumes, attachments=made)
        return target

    def _disconnect_all(self, context, uuid, volumes):
        for volume_id, info in volumes.items():
            try:
                connections.disconnect(context, cinder=self.cinder, conductor=self.conductor,
                                       driver=self.driver, host=self.host,
                                       instance_uuid=uuid, connection_info=info)
            except Exception as exc:  # noqa: BLE001 - the next one too
                LOG.warning("Could not disconnect volume %s of %s here: %s", volume_id,
                            uuid, exc)

    def rollback_at_destination(self, context, instance, volumes, source_instance_dir=None):
        """The move failed: no domain of the server here, none of its volumes connected.

        The guest's files written here go too, unless they are the source's
        own (hosts sharing one instances directory).
        """
        uuid = instance["uuid"]
        self.driver.rollback_live_migration_at_destination(
            compute_instances.driver_instance(instance))
        self._disconnect_all(context, uuid, volumes or {})
        if source_instance_dir != instance_dir(self.conf, uuid):
            remove_instance_dir(self.conf, uuid)

    def post_at_destination(self, context, instance):
        """The guest is this host's: resume it if the source paused it to complete."""
        state = self.driver.post_live_migration_at_destination(
            compute_instances.driver_instance(instance), resume=True)
        compute_instances.update_instance(self.conductor, context, instance["uuid"],
                                          {"power_state": state})
        return state

    # -- a source that died mid-move ------------------------------------------------

    def recover(self, context, instance):
        """Settle the move of a server left ``migrating`` by a dead process of this compute.

        Called when the compute starts (instance lock held). Before the
        guest could have left (``accepted``, ``queued``, ``preparing``) the
        move is undone: a cast still queued for this compute then finds the
        migration ended and does nothing. While it ran (``running``) the
        libvirt job may have gone on without us: once it has ended, a guest
        still running here means undo, a guest running on the destination
        means finish forward (records switched, this side let go), and a
        guest on neither host ends the server in ERROR with a fault.
        """
        uuid = instance["uuid"]
        migrations = self.conductor.migration_list_in_progress(context, instance_uuid=uuid)
        migration = migrations[-1] if migrations else None
        if migration is None:
            LOG.warning("Instance %s was migrating with no migration in progress; "
                        "ending its task", uuid)
            compute_instances.update_instance(self.conductor, context, uuid,
                                              {"task_state": None},
                                              expected=task_states.MIGRATING)
            return
        LOG.warning("Instance %s was live-migrating (%s, migration %s) when this compute "
                    "stopped; settling it", uuid, migration["status"], migration["uuid"])
        where = self._where(context, instance, migration)
        volumes = migration.get("dest_connections") or {}
        made = migration.get("dest_attachments") or {}
        if where == "here":
            exc = exception.LiveMigrationFailed(
                instance_uuid=uuid, reason=f"the compute {self.host} stopped during it")
            self._rollback(context, instance, migration, made, volumes, exc)
        elif where == "there":
            bdms = boot_volumes.volume_bdms(bdm_mod.listed(self.conductor, context, uuid))
            self._finish(context, instance, migration, bdms, made, volumes, {})
        else:
            self._lost(context, instance, migration, made)

    def _where(self, context, instance, migration):
        """"here", "there" (the destination runs the guest) or None (neither does)."""
        driver_instance = compute_instances.driver_instance(instance)
        if migration["status"] == migration_states.RUNNING:
            self.driver.wait_for_migration_job(
                driver_instance, self.conf.libvirt.live_migration_completion_timeout or None)
        if self.driver.runs_guest(driver_instance):
            return "here"
        if migration["status"] != migration_states.RUNNING or not migration.get("dest_compute"):
            return None
        xml = self.peers.get_domain_xml(context, host=migration["dest_compute"],
                                        instance_uuid=instance["uuid"])
        return "there" if xml else None

    def _lost(self, context, instance, migration, made):
        """The guest runs nowhere: the server is ERROR (on the source) with a fault."""
        uuid = instance["uuid"]
        message = (f"the guest of {uuid} runs neither on {self.host} nor on "
                   f"{migration.get('dest_compute')} after its live migration was "
                   "interrupted")
        LOG.error("%s", message)
        exc = exception.LiveMigrationFailed(instance_uuid=uuid, reason=message)
        self._rollback(context, instance, migration, made,
                       migration.get("dest_connections") or {}, exc)
        compute_instances.update_instance(self.conductor, context, uuid,
                                          {"vm_state": vm_states.ERROR})
        self.conductor.instance_fault_create(context, instance_uuid=uuid, code=500,
                                             message=message[:255], host=self.host)

    def recover_switched(self, context):
        """Finish the moves whose records were switched when this compute (the source) died.

        The server is the destination's already (not in this compute's
        list any more): its new attachments are completed, the ones no BDM
        names (the source's) deleted, and the migration ``completed``.
        """
        try:
            migrations = self.conductor.migration_list_in_progress(
                context, source_compute=self.host, statuses=[migration_states.POST_MIGRATING])
        except Exception as exc:  # noqa: BLE001 - the next start tries again
            LOG.warning("Could not list the moves left post-migrating on %s: %s",
                        self.host, exc)
            return
        admin = context.elevated()
        for migration in migrations:
            uuid = migration["instance_uuid"]
            try:
                for attachment_id in (migration.get("dest_attachments") or {}).values():
                    self.cinder.attachment_complete(admin, attachment_id)
                named = {b.attachment_id for b in
                         bdm_mod.listed(self.conductor, context, uuid)}
                for attachment in self.cinder.attachment_get_all(admin, instance_id=uuid,
                                                                 all_tenants=True):
                    if attachment["id"] not in named:
                        self.cinder.attachment_delete(admin, attachment["id"])
                self._save(context, migration, {"status": migration_states.COMPLETED,
                                                "requested": None})
                LOG.info("Finished live migration %s of %s after a restart",
                         migration["uuid"], uuid)
            except Exception as exc:  # noqa: BLE001 - one move must not stop the others
                LOG.warning("Finishing live migration %s of %s failed: %s",
                            migration["uuid"], uuid, exc)
