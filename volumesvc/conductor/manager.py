"""Server side of the conductor RPC interface.

The conductor is stateless and has the database credentials the computes
lack: every piece of compute state is persisted here. Multi-step workflows
live in ``conductor/tasks/``; this module only routes RPC methods to them or
to the object functions.
"""

import oslo_messaging as messaging
from oslo_log import log as logging

from volumesvc import exception, periodic
from volumesvc.conductor import attach_watch, image_requests, rpcapi, stale_moves, volume_requests
from volumesvc.conductor.tasks import attach as attach_task
from volumesvc.conductor.tasks import base as task_base
from volumesvc.conductor.tasks import build as build_task
from volumesvc.conductor.tasks import delete as delete_task
from volumesvc.conductor.tasks import detach as detach_task
from volumesvc.conductor.tasks import evacuate as evacuate_task
from volumesvc.conductor.tasks import live_migrate as live_migrate_task
from volumesvc.conductor.tasks import moves as moves_task
from volumesvc.conductor.tasks import power
from volumesvc.conductor.tasks import rebuild as rebuild_task
from volumesvc.conductor.tasks import reconcile as reconcile_task
from volumesvc.conductor.tasks import resize as resize_task
from volumesvc.conductor.tasks import shelve as shelve_task
from volumesvc.conductor.tasks import swap as swap_task
from volumesvc.conductor.tasks import unshelve as unshelve_task
from volumesvc.db import api as db_api
from volumesvc.objects import attachment_status, compute_host
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import instance_fault as fault_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.objects import service as service_obj

LOG = logging.getLogger(__name__)

# Raised to callers as themselves (oslo.messaging re-creates them remotely),
# without an ERROR log with a traceback in the conductor.
_EXPECTED = (exception.NotFound, exception.UnexpectedTaskStateError, exception.Invalid)
# What an attach may legitimately fail with (mapped to 400/403/409 below 2.101).
_ATTACH_EXPECTED = _EXPECTED + (exception.Forbidden, exception.Conflict,
                                exception.VirtDriverError)


def _persists(func, *, also=()):
    """A write a compute asks for: run again when the database picks it as a deadlock victim.

    Each such method is one transaction of its own, rolled back whole when
    MariaDB (or Galera) ends it as a deadlock's victim; writes of concurrent
    builds and attaches collide that way under load. Left to the compute the
    rollback would end a build or attach in error although running the write
    again is all the database asks for.
    """
    return messaging.expected_exceptions(*_EXPECTED, *also)(db_api.retry_on_deadlock(func))


def _persists_migration(func):
    """``_persists``, with a migration's state conflict raised to the compute as itself."""
    return _persists(func, also=(exception.InvalidMigrationState,))


class ConductorManager:
    """RPC endpoint for topic ``conductor``."""

    target = messaging.Target(version=rpcapi.VERSION)

    def __init__(self, conf, *, db, compute_rpcapi, cinder, glance=None):
        self._conf = conf
        self._db = db
        self._compute = compute_rpcapi
        self._cinder = cinder
        self._up = compute_host.UpCache(conf)
        self._watch = attach_watch.AttachWatch(conf, db=db, compute_rpcapi=compute_rpcapi)
        self._deps = task_base.TaskDeps(conf, db, compute_rpcapi, cinder, up_cache=self._up,
                                        watch=self._watch)
        self._requests = volume_requests.VolumeRequests(self._deps)
        self._images = image_requests.ImageRequests(conf, db=db, cinder=cinder, glance=glance)

    # -- process lifecycle ---------------------------------------------------

    def init_host(self):
        """Recover the volume requests this host's previous process left (soon after start)."""
        self._requests.start()

    def cleanup_host(self):
        self._requests.stop()
        self._watch.stop()

    @periodic.periodic_task("conductor", "volume_request_recovery_interval")
    def _recover_volume_requests(self, context):
        """Re-run accepted attaches/detaches no live conductor owns (``volume_requests.py``)."""
        self._requests.recover(context)

    @periodic.periodic_task("conductor", "volume_request_recovery_interval")
    def _expire_unstarted_moves(self, context):
        """Drive again the moves no compute took (``stale_moves.py``), end those
        nobody took in time (``conductor/tasks/moves.py``)."""
        moves_task.expire_unstarted(self._conf, self._db, context)
        stale_moves.redrive(self._deps, context)

    @periodic.periodic_task(None, "resize_confirm_poll_interval")
    def _confirm_expired_resizes(self, context):
        """Confirm resizes nobody confirmed within ``[DEFAULT] resize_confirm_window``."""
        resize_task.confirm_expired(self._deps, context)


    # -- heartbeats ----------------------------------------------------------

    def service_update(self, context, *, host, binary, topic, version, capabilities):
        service = service_obj.heartbeat(
            self._db, context, host=host, binary=binary, topic=topic,
            version=version, capabilities=capabilities)
        return service.to_dict()

    def compute_started(self, context, *, host):
        """A compute process started: its watched attaches are due now (``attach_watch``)."""
        due = self._watch.due_now(host)
        if due:
            LOG.info("Compute %s started: casting again %d attach(es) it may have lost",
                     host, due)

    # -- server lifecycle (casts from the API) ------------------------------

    def build_instances(self, context, *, instance_uuids, request_spec):
        for instance_uuid in instance_uuids:
            build_task.BuildTask(self._deps, context, instance_uuid=instance_uuid,
                                 request_spec=request_spec).execute()

    def delete_instance(self, context, *, instance_uuid):
        delete_task.DeleteTask(self._deps, context, instance_uuid=instance_uuid).execute()

    def reboot_instance(self, context, *, instance_uuid, reboot_type):
        instance = instance_obj.get_by_uuid(self._db, context, instance_uuid)
        if not instance.host:
            LOG.warning("Instance %s has no host; reboot dropped", instance_uuid)
            instance_obj.save(self._db, context, instance_uuid, {"task_state": None})
            return
        self._compute.reboot_instance(
            context, host=instance.host, instance=instance.to_dict(),
            reboot_type=reboot_type)

    # -- stop/start, shelve/offload/unshelve --------------------------

    def stop_instance(self, context, *, instance_uuid):
        power.StopTask(self._deps, context, instance_uuid=instance_uuid).execute()

    def start_instance(self, context, *, instance_uuid):
        power.StartTask(self._deps, context, instance_uuid=instance_uuid).execute()

    def shelve_instance(self, context, *, instance_uuid):
        shelve_task.ShelveTask(self._deps, context, instance_uuid=instance_uuid).execute()

    def shelve_offload_instance(self, context, *, instance_uuid):
        shelve_task.ShelveOffloadTask(self._deps, context,
                                      instance_uuid=instance_uuid).execute()

    def unshelve_instance(self, context, *, instance_uuid, availability_zone=None, host=None):
        unshelve_task.UnshelveTask(
            self._deps, context, instance_uuid=instance_uuid,
            availability_zone=availability_zone, host=host).execute()

    def rebuild_instance(self, context, *, instance_uuid, image_ref, reimage,
                         preserve_ephemeral=False):
        """Cast from the API: ``conductor/tasks/rebuild.py``."""
        rebuild_task.RebuildTask(self._deps, context, instance_uuid=instance_uuid,
                                 image_ref=image_ref, reimage=reimage,
                                 preserve_ephemeral=preserve_ephemeral).execute()

    @periodic.periodic_task(None, "shelved_poll_interval")
    def _offload_shelved_instances(self, context):
        shelve_task.offload_expired(self._conf, self._db, self._compute, context)

    @periodic.periodic_task("conductor", "abandoned_snapshot_cleanup_interval")
    def _delete_abandoned_snapshots(self, context):
        """End createImages whose API died; delete what failed ones left (``image_requests``)."""
        self._images.run(context)

    # -- volume attachments -------------------------------------------

    @messaging.expected_exceptions(*_ATTACH_EXPECTED)
    def attach_volume(self, context, *, instance_uuid, volume_id, device=None, disk_bus=None,
                      device_type=None, tag=None, delete_on_termination=False,
                      multiattach=None, request_uuid=None, read_only=False):
        """Called below 2.101 (returns the BDM), cast from 2.101 (result unused).

        ``multiattach``: the API's reading of the volume; None means ask Cinder.
        ``request_uuid``: the API's record of a cast, claimed first.
        ``read_only``: a read-only attachment (API 2.108).
        """
        task = attach_task.AttachTask(
            self._deps, context, instance_uuid=instance_uuid, volume_id=volume_id,
            device=device, disk_bus=disk_bus, device_type=device_type, tag=tag,
            delete_on_termination=delete_on_termination, multiattach=multiattach,
            read_only=read_only)
        if request_uuid is None:
            return task.execute()
        return self._requests.run_cast(context, request_uuid, task.execute)

    def detach_volume(self, context, *, instance_uuid, volume_id, attachment_id,
                      request_uuid=None):
        """Cast from the API: ``conductor/tasks/detach.py``; ``request_uuid``: its record."""
        task = detach_task.DetachTask(self._deps, context, instance_uuid=instance_uuid,
                                      volume_id=volume_id, attachment_id=attachment_id)
        if request_uuid is None:
            return task.execute()
        return self._requests.run_cast(context, request_uuid, task.execute)

    def live_migrate_instance(self, context, *, instance_uuid, migration_id, host=None,
                              force=False):
        live_migrate_task.LiveMigrateTask(self._deps, context, instance_uuid=instance_uuid,
                                          migration_id=migration_id, host=host,
                                          force=force).execute()

    def resize_instance(self, context, *, instance_uuid, migration_id, host=None):
        """Cast from the API: ``conductor/tasks/resize.py``."""
        resize_task.ResizeTask(self._deps, context, instance_uuid=instance_uuid,
                               migration_id=migration_id, host=host).execute()

    def confirm_resize(self, context, *, instance_uuid, migration_id):
        resize_task.cleanup_source(self._deps, context, instance_uuid, migration_id)

    def revert_resize(self, context, *, instance_uuid, migration_id):
        resize_task.revert(self._deps, context, instance_uuid, migration_id)

    def evacuate_instance(self, context, *, instance_uuid, migration_id, host=None,
                          force=False, target_state=None):
        """Cast from the API: ``conductor/tasks/evacuate.py``."""
        evacuate_task.EvacuateTask(self._deps, context, instance_uuid=instance_uuid,
                                   migration_id=migration_id, host=host, force=force,
                                   target_state=target_state).execute()

    def swap_volume(self, context, *, instance_uuid, old_volume_id, new_volume_id):
        """Cast from the API: ``conductor/tasks/swap.py``."""
        swap_task.SwapTask(self._deps, context, instance_uuid=instance_uuid,
                           old_volume_id=old_volume_id,
                           new_volume_id=new_volume_id).execute()

    # -- external events -----------------------------------------------

    def external_instance_event(self, context, *, instance_uuid, events):
        """Forward to the instance's host, read now (it may have changed since the API)."""
        try:
            instance = instance_obj.get_by_uuid(self._db, context, instance_uuid)
        except exception.InstanceNotFound:
            LOG.warning("Instance %s is gone; events %s dropped", instance_uuid,
                        [e.get("name") for e in events])
            return
        if not instance.host:
            LOG.warning("Instance %s has no host; events %s dropped", instance_uuid,
                        [e.get("name") for e in events])
            return
        self._compute.external_instance_event(
            context, host=instance.host, instance=instance.to_dict(), events=events)

    # -- dangling volume attachments ----------------------------------

    @messaging.expected_exceptions(*_EXPECTED)
    def reconcile_volume_attachments(self, context, *, instance_uuids, dry_run=False,
                                     attachments=None, available_volume_ids=None):
        return reconcile_task.ReconcileTask(
            self._deps, context, instance_uuids=instance_uuids,
            dry_run=dry_run, attachments=attachments,
            available_volume_ids=available_volume_ids).execute()

    # -- assisted volume snapshots -------------------------------------

    def volume_snapshot_create(self, context, *, instance_uuid, volume_id, create_info):
        instance = instance_obj.get_by_uuid(self._db, context, instance_uuid)
        self._compute.volume_snapshot_create(
            context, host=instance.host, instance=instance.to_dict(), volume_id=volume_id,
            create_info=create_info)

    def volume_snapshot_delete(self, context, *, instance_uuid, volume_id, snapshot_id,
                               delete_info):
        instance = instance_obj.get_by_uuid(self._db, context, instance_uuid)
        self._compute.volume_snapshot_delete(
            context, host=instance.host, instance=instance.to_dict(), volume_id=volume_id,
            snapshot_id=snapshot_id, delete_info=delete_info)

    # -- persistence on behalf of computes (calls) -------------------------

    @messaging.expected_exceptions(*_EXPECTED)
    def instance_get(self, context, *, instance_uuid):
        return instance_obj.get_by_uuid(self._db, context, instance_uuid).to_dict()

    @_persists
    def instance_update(self, context, *, instance_uuid, values, expected_task_state=None,
                        check_task_state=False):
        expected = expected_task_state if check_task_state else instance_obj.UNSET
        return instance_obj.save(self._db, context, instance_uuid, _datetimes(values),
                                 expected_task_state=expected).to_dict()

    @_persists
    def instance_destroy(self, context, *, instance_uuid):
        return instance_obj.destroy(self._db, context, instance_uuid).to_dict()

    @messaging.expected_exceptions(*_EXPECTED)
    def bdm_list(self, context, *, instance_uuid):
        return [b.to_dict() for b in bdm_obj.list_by_instance(self._db, context, instance_uuid)]

    @_persists
    def bdm_create(self, context, *, values):
        return bdm_obj.create(self._db, context, values).to_dict()

    @_persists
    def bdm_update(self, context, *, bdm_uuid, values, expected_status=None,
                   finish_event=None):
        if not finish_event:
            return self._bdm_update(context, bdm_uuid, values, expected_status)
        # One transaction for both writes (the event is finished whatever
        # became of the save).
        with self._db.writer(context):
            try:
                return self._bdm_update(context, bdm_uuid, values, expected_status)
            finally:
                self._finish_event(context, finish_event)

    def _bdm_update(self, context, bdm_uuid, values, expected_status):
        if expected_status is not None:
            return attachment_status.save_if(self._db, context, bdm_uuid, values,
                                             expected_status).to_dict()
        return bdm_obj.save(self._db, context, bdm_uuid, values).to_dict()

    def _finish_event(self, context, finish_event):
        """An action_event_finish carried by another call; a missing action is fine."""
        try:
            action_obj.event_finish(self._db, context, finish_event["instance_uuid"],
                                    finish_event["request_id"], finish_event["event"],
                                    result=finish_event.get("result", "Success"),
                                    traceback=finish_event.get("traceback"),
                                    details=finish_event.get("details"))
        except exception.NotFound:
            pass

    @_persists
    def bdm_destroy(self, context, *, bdm_uuid, values=None):
        bdm_obj.destroy(self._db, context, bdm_uuid, values=values)

    @_persists
    def action_event_start(self, context, *, instance_uuid, request_id, event, host):
        action_obj.event_start(self._db, context, instance_uuid, request_id, event, host=host)

    @_persists
    def action_event_finish(self, context, *, instance_uuid, request_id, event, result,
                            traceback=None, details=None):
        action_obj.event_finish(self._db, context, instance_uuid, request_id, event,
                                result=result, traceback=traceback, details=details)

    @messaging.expected_exceptions(*_EXPECTED)
    def instance_list_by_host(self, context, *, host):
        return [i.to_dict() for i in instance_obj.list_instances(self._db, context, host=host)]

    @_persists
    def action_start(self, context, *, instance_uuid, action, request_id):
        action_obj.action_start(self._db, context, instance_uuid, action, request_id,
                                context.user_id, context.project_id)

    @_persists
    def instance_fault_create(self, context, *, instance_uuid, code, message, details=None,
                              host=None):
        fault_obj.create(self._db, context, instance_uuid=instance_uuid, code=code,
                         message=message, details=details, host=host)

    # -- compute → conductor: live migration records --------------------------

    @_persists_migration
    def migration_get(self, context, *, migration_id):
        return migration_obj.get(self._db, context, migration_id).to_dict()

    @_persists_migration
    def migration_list_in_progress(self, context, *, instance_uuid=None, source_compute=None,
                                   statuses=None):
        return [m.to_dict() for m in migration_obj.list_in_progress(
            self._db, context, instance_uuid=instance_uuid, source_compute=source_compute,
            statuses=statuses or migration_obj.IN_PROGRESS)]

    @_persists_migration
    def migration_update(self, context, *, migration_id, values, expected_status=None):
        return migration_obj.save(self._db, context, migration_id, values,
                                  expected_status=expected_status).to_dict()

    @_persists_migration
    def migration_add_dest_attachment(self, context, *, migration_id, volume_id,
                                      attachment_id):
        return migration_obj.add_dest_attachment(self._db, context, migration_id, volume_id,
                                                 attachment_id).to_dict()

    @_persists_migration
    def live_migration_switch(self, context, *, migration_id, bdms):
        return migration_obj.switch_host(self._db, context, migration_id, bdms).to_dict()

    # -- compute → conductor: cold move records --------------------------------

    @_persists_migration
    def migration_settle(self, context, *, migration_id, expected_status, status,
                         instance_values, expected_task_state):
        return migration_obj.settle(
            self._db, context, migration_id, expected_status=expected_status, status=status,
            instance_values=instance_values,
            expected_task_state=expected_task_state).to_dict()

    @_persists_migration
    def migration_list_cold(self, context, *, instance_uuid=None, source_compute=None,
                            dest_compute=None, statuses=None):
        return [m.to_dict() for m in migration_obj.list_cold(
            self._db, context, instance_uuid=instance_uuid, source_compute=source_compute,
            dest_compute=dest_compute, statuses=statuses or migration_obj.COLD_UNSETTLED)]

    # -- compute → conductor: evacuation records ------------------------------

    @_persists_migration
    def migration_list_evacuations(self, context, *, statuses, instance_uuid=None,
                                   source_compute=None, dest_compute=None):
        return [m.to_dict() for m in migration_obj.list_evacuations(
            self._db, context, statuses=statuses, instance_uuid=instance_uuid,
            source_compute=source_compute, dest_compute=dest_compute)]

    @_persists_migration
    def evacuation_finish(self, context, *, migration_id, values):
        return migration_obj.finish_evacuation(self._db, context, migration_id,
                                               values).to_dict()


_DATETIME_FIELDS = ("launched_at", "terminated_at")


def _datetimes(values):
    """ISO strings that crossed the bus back into datetimes for the DB layer."""
    from oslo_utils import timeutils

    out = dict(values)
    for key in _DATETIME_FIELDS:
        if isinstance(out.get(key), str):
            out[key] = timeutils.parse_isotime(out[key]).replace(tzinfo=None)
    return out
