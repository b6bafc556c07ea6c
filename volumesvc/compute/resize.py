"""Cold migration and resize, the computes' part: stop here, start there, or back.

A volume-backed server has nothing on its host but a domain and its
volumes' connections, so a cold move is an offload on the source and a
start with the new flavor on the destination, and a revert the same the
other way (``compute/lifecycle.py`` swaps each volume's connected Cinder
attachment for one without a connector, made and recorded in the BDM
before the old one is deleted, so at every moment Cinder has each volume
attached to the server exactly once).

* The source (cast ``resize_instance``, task ``resize_migrating``, migration
  ``migrating``) destroys the domain and disconnects every volume, then
  records ``resize_migrated``/``post-migrating`` and casts the destination.
* The destination (``finish_resize``, task ``resize_finish``) connects every
  volume with its connector, defines the domain with the new flavor
  (started when the server was running), completes the attachments and
  in one transaction makes the server its own: host, flavor, ``RESIZED``,
  migration ``finished``.
* A revert (``revert_resize`` on the destination) destroys and disconnects
  there and hands the server back to the source with its old flavor in
  one write; the source (``finish_revert_resize``) connects and starts it
  and ends the migration ``reverted``. The same steps put the server back
  on the source when the move fails on either side (migration ``error``,
  a fault, the server as it was before).
* A confirm is records only (the API's); the source only removes the
  server's files it kept (``confirm_resize``).

Each step begins by reading the server and checking its task and host, and
only releases what it finds connected, so a step re-run after a SIGKILL
(the start of either compute, :meth:`Resizer.recover` and
:meth:`Resizer.recover_destination`) or received twice does the right
thing.
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.common import outage
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import migration_states, power_state, task_states, vm_states
from volumesvc.virt.instance_path import remove_instance_dir

LOG = logging.getLogger(__name__)

# Nova names the destination's notification (instance.resize_finish.*)
# after the task it runs in.
_FINISH_NOTIFICATION = task_states.RESIZE_FINISH

#: The tasks a dead process of this compute may leave a cold move in.
TASKS = (task_states.RESIZE_MIGRATING, task_states.RESIZE_MIGRATED,
         task_states.RESIZE_FINISH, task_states.RESIZE_REVERTING)
# The tasks a move can be in when it is put back on the source.
_PUT_BACK_FROM = [task_states.RESIZE_MIGRATING, task_states.RESIZE_MIGRATED,
                  task_states.RESIZE_FINISH, task_states.RESIZE_REVERTING]


def _running(instance) -> bool:
    """Whether the guest runs once the move is over: it ran before it (a ``RESIZED``
    server keeps the power state it was given at the destination)."""
    if instance.get("vm_state") == vm_states.RESIZED:
        return instance.get("power_state") == power_state.RUNNING
    return instance.get("vm_state") == vm_states.ACTIVE


class Resizer:
    """One per compute process: the source's and the destination's steps."""

    def __init__(self, conf, *, driver, conductor, cinder, peers, reporter, lifecycle,
                 glance=None, keys=None):
        self.conf = conf
        self.host = conf.host
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.peers = peers  # the compute rpcapi, to reach the other host
        self.reporter = reporter
        self.lifecycle = lifecycle
        self.glance = glance
        self.keys = keys
        # The calls a step starts and ends with are asked again while no
        # conductor answers (``Patience``): a move is not left half started,
        # nor undone after its guest moved, because one conductor died.
        self.patience = outage.Patience(conf.compute.database_outage_wait)

    # -- helpers ---------------------------------------------------------------

    def _in_task(self, context, uuid, task):
        """The server when it is in ``task`` (a lost answer's write was made), else None."""
        instance = self._instance(context, uuid)
        return instance if instance and instance.get("task_state") == task else None

    def _instance(self, context, uuid):
        try:
            return self.conductor.instance_get(context, instance_uuid=uuid)
        except exception.InstanceNotFound:
            return None

    def _migration(self, context, migration_id):
        return self.conductor.migration_get(context, migration_id=migration_id)

    def _settle(self, context, migration, *, expected, status, values, task):
        return self.conductor.migration_settle(
            context, migration_id=migration["id"], expected_status=expected, status=status,
            instance_values=values, expected_task_state=task)

    def _release(self, context, instance, bdms, *, settle):
        """No domain and no connection here; each volume keeps one attachment.

        Only volumes connected here are disconnected (a re-run after a kill
        finds the others already swapped). ``settle``: complete a connected
        attachment first (a start that failed half-way left it
        ``attaching``, and Cinder refuses the new reservation until then).
        """
        self.driver.destroy(compute_instances.driver_instance(instance),
                            boot_volumes.block_device_info(bdms))
        connected = [b for b in boot_volumes.volume_bdms(bdms) if b.has_connection]
        self.lifecycle.disconnect_volumes(context, instance["uuid"], connected, settle=settle)

    def _start_here(self, context, instance, flavor):
        """Connect every volume here, define the domain with ``flavor`` (started when the
        server runs), complete the attachments; the values the server then has."""
        target = dict(instance, flavor=flavor)
        bdms = bdm_mod.listed(self.conductor, context, instance["uuid"])
        volumes = boot_volumes.BootVolumes(self.conf, self.cinder, self.conductor,
                                           self.driver, context, target, self.glance,
                                           keys=self.keys)
        bdi = volumes.connect(bdms)
        running = _running(instance)
        driver_instance = compute_instances.driver_instance(target)
        if running:
            self.driver.spawn(driver_instance, bdi)
        else:
            self.driver.define(driver_instance, bdi)
        volumes.complete(bdms)
        return {"host": self.host, "node": self.host, "flavor": flavor,
                "root_device_name": bdi["root_device_name"],
                "power_state": power_state.RUNNING if running else power_state.SHUTDOWN}

    def _fail(self, context, uuid, migration, exc):
        """The server cannot be put back: ERROR with a fault, the migration ``error``."""
        LOG.error("Cold move %s of %s failed and the server could not be put back: %s",
                  migration["uuid"], uuid, exc)
        self.reporter.fault(context, uuid, exc)
        try:
            compute_instances.update_instance(self.conductor, context, uuid,
                                              {"vm_state": vm_states.ERROR,
                                               "task_state": None})
        except exception.InstanceNotFound:
            pass
        try:
            self.conductor.migration_update(context, migration_id=migration["id"],
                                            values={"status": migration_states.ERROR})
        except Exception as err:  # noqa: BLE001 - the server's state says it already
            LOG.warning("Migration %s not set to error: %s", migration["id"], err)

    # -- the source --------------------------------------------------------------

    def resize_instance(self, context, instance, migration):
        """Stop the guest and let go of its volumes here, then cast the destination."""
        uuid = instance["uuid"]
        try:
            # Both accept their own result: asked again, they change nothing.
            migration = self.patience.repeat(
                f"take cold move {migration['uuid']}", self.conductor.migration_update,
                context, migration_id=migration["id"],
                values={"status": migration_states.MIGRATING},
                expected_status=[migration_states.PRE_MIGRATING, migration_states.MIGRATING])
            instance = self.patience.repeat(
                f"set {uuid} resize_migrating", compute_instances.update_instance,
                self.conductor, context, uuid, {"task_state": task_states.RESIZE_MIGRATING},
                expected=[task_states.RESIZE_PREP, task_states.RESIZE_MIGRATING])
        except (exception.InvalidMigrationState, exception.UnexpectedTaskStateError,
                exception.InstanceNotFound) as exc:
            LOG.info("Cold move %s of %s not started: %s", migration["uuid"], uuid, exc)
            return
        self.reporter.notify(context, instance, "resize", "start")
        try:
            with self.reporter.event(context, uuid, "compute_resize_instance"):
                bdms = self.patience.repeat(f"read the BDMs of {uuid}", bdm_mod.listed,
                                            self.conductor, context, uuid)
                self._release(context, instance, bdms, settle=False)
                if migration["dest_compute"] != self.host:
                    remove_instance_dir(self.conf, uuid)
                migration = self.patience.record(
                    f"record that {uuid} left {self.host}", self._settle, context,
                    migration, expected=[migration_states.MIGRATING],
                    status=migration_states.POST_MIGRATING,
                    values={"task_state": task_states.RESIZE_MIGRATED},
                    task=[task_states.RESIZE_MIGRATING],
                    done=lambda: compute_instances.migration_reached(
                        self.conductor, context, migration["id"],
                        (migration_states.POST_MIGRATING,)))
        except Exception as exc:  # noqa: BLE001 - the server goes back to its guest here
            LOG.warning("Cold move %s of %s failed on the source: %s", migration["uuid"],
                        uuid, exc)
            self.reporter.fault(context, uuid, exc)
            self.reporter.notify(context, instance, "resize", "error", exc=exc)
            self.put_back(context, uuid, migration, outcome=migration_states.ERROR)
            return
        self.reporter.notify(context, instance, "resize", "end")
        self.peers.finish_resize(context, host=migration["dest_compute"],
                                 instance=instance, migration=migration)

    def put_back(self, context, uuid, migration, *, outcome):
        """Start the server here again with its old flavor (a revert, or a failed move).

        Whatever is still connected here is released first, then every
        volume connected and the guest started (when it ran before); the
        server is as before the move (``ACTIVE`` or ``STOPPED``, its old
        flavor, no task) and the migration ``outcome`` (``reverted`` or
        ``error``). When even that fails the server is ERROR with a fault.
        """
        instance = self._instance(context, uuid)
        migration = self._migration(context, migration["id"])
        if instance is None or instance.get("host") != self.host or \
                instance.get("task_state") not in _PUT_BACK_FROM:
            LOG.info("Instance %s is not here in a cold move any more; not putting it back",
                     uuid)
            return
        old_flavor = migration.get("old_flavor") or instance.get("flavor")
        reverting = outcome == migration_states.REVERTED
        if reverting:
            self.reporter.notify(context, instance, "resize_revert", "start")
        try:
            with self.reporter.event(context, uuid, "compute_finish_revert_resize"):
                bdms = bdm_mod.listed(self.conductor, context, uuid)
                self._release(context, instance, bdms, settle=True)
                values = self._start_here(context, instance, old_flavor)
                running = values["power_state"] == power_state.RUNNING
                values.update(vm_state=vm_states.ACTIVE if running else vm_states.STOPPED,
                              task_state=None, node=migration.get("source_node") or self.host)
                if migration.get("old_instance_type_id") is not None:
                    values["flavor_id"] = migration["old_instance_type_id"]
                self._settle(context, migration,
                             expected=[migration_states.MIGRATING,
                                       migration_states.POST_MIGRATING,
                                       migration_states.REVERTING],
                             status=outcome, values=values, task=_PUT_BACK_FROM)
        except (exception.UnexpectedTaskStateError, exception.InvalidMigrationState) as exc:
            LOG.info("Putting %s back was interrupted: %s", uuid, exc)
            return
        except Exception as exc:  # noqa: BLE001
            self._fail(context, uuid, migration, exc)
            return
        if reverting:
            self.reporter.notify(context, dict(instance, flavor=old_flavor), "resize_revert",
                                 "end")
        LOG.info("Instance %s runs on %s again with its old flavor (%s)", uuid, self.host,
                 outcome)

    def confirm_resize(self, context, instance, migration):
        """The move was confirmed: remove what the server left on this (source) host."""
        uuid = instance["uuid"]
        if migration.get("dest_compute") == self.host:
            return  # a resize on one host: the server's files are its own still.
        current = self._instance(context, uuid)
        if current is not None and current.get("host") == self.host:
            return  # back here (never confirmed after all)
        self.reporter.notify(context, instance, "resize_confirm", "start")
        self.driver.destroy(compute_instances.driver_instance(instance))
        remove_instance_dir(self.conf, uuid)
        self.reporter.notify(context, instance, "resize_confirm", "end")

    # -- the destination ---------------------------------------------------------

    def finish_resize(self, context, instance, migration, *, again=False):
        """Connect and start the server here with its new flavor; ``finished``.

        ``again``: a dead process of this compute left it half done; what
        it connected is released first. A failure releases everything here
        and casts the source to put the server back.
        """
        uuid = instance["uuid"]
        expected = [task_states.RESIZE_MIGRATED] + ([task_states.RESIZE_FINISH] if again
                                                    else [])
        try:
            instance = self.patience.record(
                f"set {uuid} resize_finish", compute_instances.update_instance,
                self.conductor, context, uuid, {"task_state": task_states.RESIZE_FINISH},
                expected=expected, done=lambda: self._in_task(context, uuid,
                                                              task_states.RESIZE_FINISH))
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound) as exc:
            LOG.info("Finishing cold move %s of %s skipped: %s", migration["uuid"], uuid, exc)
            return
        migration = self.patience.repeat(f"read migration {migration['uuid']}",
                                         self._migration, context, migration["id"])
        new_flavor = migration.get("new_flavor") or instance.get("flavor")
        target = dict(instance, flavor=new_flavor)
        self.reporter.notify(context, target, _FINISH_NOTIFICATION, "start")
        try:
            with self.reporter.event(context, uuid, "compute_finish_resize"):
                if again:
                    self._release(context, target,
                                  bdm_mod.listed(self.conductor, context, uuid), settle=True)
                values = self._start_here(context, instance, new_flavor)
                values.update(vm_state=vm_states.RESIZED, task_state=None)
                if migration.get("new_instance_type_id") is not None:
                    values["flavor_id"] = migration["new_instance_type_id"]
                self.patience.record(
                    f"record that {uuid} runs on {self.host}", self._settle, context,
                    migration, expected=[migration_states.POST_MIGRATING],
                    status=migration_states.FINISHED, values=values,
                    task=[task_states.RESIZE_FINISH],
                    done=lambda: compute_instances.migration_reached(
                        self.conductor, context, migration["id"],
                        (migration_states.FINISHED, migration_states.CONFIRMED,
                         migration_states.REVERTING, migration_states.REVERTED)))
        except Exception as exc:  # noqa: BLE001 - the source puts it back
            LOG.warning("Cold move %s of %s failed on the destination: %s",
                        migration["uuid"], uuid, exc)
            self.reporter.fault(context, uuid, exc)
            self.reporter.notify(context, target, _FINISH_NOTIFICATION, "error", exc=exc)
            self._give_back(context, target, migration)
            return
        self.reporter.notify(context, dict(target, **values), _FINISH_NOTIFICATION, "end")
        LOG.info("Instance %s now runs on %s (cold move %s finished)", uuid, self.host,
                 migration["uuid"])

    def _give_back(self, context, instance, migration):
        uuid = instance["uuid"]
        try:
            self._release(context, instance,
                          bdm_mod.listed(self.conductor, context, uuid), settle=True)
        except Exception as exc:  # noqa: BLE001
            self._fail(context, uuid, migration, exc)
            return
        if migration["source_compute"] != self.host:
            remove_instance_dir(self.conf, uuid)
        self.peers.finish_revert_resize(context, host=migration["source_compute"],
                                        instance=instance, migration=migration,
                                        outcome=migration_states.ERROR)

    def revert_resize(self, context, instance, migration):
        """Release the server here and hand it back to the source with its old flavor."""
        uuid = instance["uuid"]
        current = self._instance(context, uuid)
        if current is None or current.get("host") != self.host or \
                current.get("task_state") != task_states.RESIZE_REVERTING:
            LOG.info("Instance %s is not reverting here; nothing to do", uuid)
            return
        migration = self._migration(context, migration["id"])
        source = migration["source_compute"]
        if source == self.host:
            self.put_back(context, uuid, migration, outcome=migration_states.REVERTED)
            return
        try:
            with self.reporter.event(context, uuid, "compute_revert_resize"):
                self._release(context, current,
                              bdm_mod.listed(self.conductor, context, uuid),
                              settle=True)
                remove_instance_dir(self.conf, uuid)
                values = {"host": source, "node": migration.get("source_node") or source,
                          "flavor": migration.get("old_flavor") or current.get("flavor")}
                self._settle(context, migration, expected=[migration_states.REVERTING],
                             status=migration_states.REVERTING, values=values,
                             task=[task_states.RESIZE_REVERTING])
        except Exception as exc:  # noqa: BLE001
            self._fail(context, uuid, migration, exc)
            return
        self.peers.finish_revert_resize(context, host=source, instance=current,
                                        migration=migration,
                                        outcome=migration_states.REVERTED)

    # -- after a SIGKILL -----------------------------------------------------------

    def recover(self, context, instance):
        """Go on with a cold move a dead process of this compute left (the server is here).

        Called at start with the instance lock held, for a server of this
        host in one of :data:`TASKS`.
        """
        uuid = instance["uuid"]
        migrations = self.conductor.migration_list_cold(
            context, instance_uuid=uuid,
            statuses=[migration_states.MIGRATING, migration_states.POST_MIGRATING,
                      migration_states.REVERTING])
        if not migrations:
            LOG.warning("Instance %s was in %s with no cold move in progress; ending the "
                        "task", uuid, instance.get("task_state"))
            compute_instances.update_instance(self.conductor, context, uuid,
                                              {"task_state": None},
                                              expected=[instance.get("task_state")])
            return
        migration = migrations[-1]
        task = instance.get("task_state")
        LOG.warning("Instance %s was in %s (cold move %s, %s) when this compute stopped; "
                    "going on", uuid, task, migration["uuid"], migration["status"])
        same_host = migration["source_compute"] == migration["dest_compute"]
        if task == task_states.RESIZE_MIGRATING:
            self.resize_instance(context, instance, migration)
        elif task == task_states.RESIZE_MIGRATED:
            self.peers.finish_resize(context, host=migration["dest_compute"],
                                     instance=instance, migration=migration)
        elif task == task_states.RESIZE_FINISH and same_host:
            self.finish_resize(context, instance, migration, again=True)
        elif task == task_states.RESIZE_REVERTING:
            if migration["dest_compute"] == self.host and not same_host:
                self.revert_resize(context, instance, migration)
            else:
                self.put_back(context, uuid, migration, outcome=migration_states.REVERTED)

    def recover_destination(self, context, lock):
        """Moves to this host a dead process left between the source's part and its own.

        The server is still the source's (so the start-up pass above does
        not see it): a finish that was running is done again from the
        start, one the source cast but nobody took is taken; a revert this
        host handed back but whose cast was lost is cast again.
        """
        try:
            migrations = self.conductor.migration_list_cold(
                context, dest_compute=self.host,
                statuses=[migration_states.POST_MIGRATING, migration_states.REVERTING])
        except Exception as exc:  # noqa: BLE001 - the next start tries again
            LOG.warning("Could not list the cold moves to %s: %s", self.host, exc)
            return
        for migration in migrations:
            uuid = migration["instance_uuid"]
            if migration["source_compute"] == self.host:
                continue  # one host: the start-up pass saw it
            try:
                with lock(uuid):
                    instance = self._instance(context, uuid)
                    if instance is None or instance.get("host") == self.host:
                        continue
                    task = instance.get("task_state")
                    if migration["status"] == migration_states.POST_MIGRATING and task in (
                            task_states.RESIZE_MIGRATED, task_states.RESIZE_FINISH):
                        self.finish_resize(context, instance, migration, again=True)
                    elif migration["status"] == migration_states.REVERTING and \
                            task == task_states.RESIZE_REVERTING:
                        self.peers.finish_revert_resize(
                            context, host=migration["source_compute"], instance=instance,
                            migration=migration, outcome=migration_states.REVERTED)
            except Exception as exc:  # noqa: BLE001 - one move must not stop the others
                LOG.warning("Resuming cold move %s of %s failed: %s", migration["uuid"],
                            uuid, exc)
