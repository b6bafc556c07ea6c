"""Cold migration and resize, the conductor's part: the destination, then the source.

The API has set the server's task ``resize_prep``, recorded the action and
made the migration row (``pre-migrating``, with the server's old and new
flavors). Here the destination is checked or chosen as for any placement
(``scheduling.pick_host``): up, enabled, new enough to take part
(``version.RESIZE_VERSION``), every capability the server's volumes need,
and room for the new flavor (unsettled cold moves already hold room on
both of their hosts, so two resizes cannot take the same room). The
server's own host is left out unless the move is a resize and
``[DEFAULT] allow_resize_to_same_host`` is set, as in Nova; a cold
migration always moves. An image-backed server (its root disk a file on
its host) is resized on its own host only. Then the source compute owns the move
(``compute/resize.py``).

A refusal leaves the server where and as it was: no task, the migration
``error``, a fault and an Error ``conductor_migrate_server`` event.

Also here: the confirm's last step (the source removes the server's
files; the records were written by the API or by :func:`confirm_expired`)
and the revert's cast to the server's current (destination) compute.
"""

import datetime

from oslo_log import log as logging

from volumesvc import exception, version
from volumesvc.conductor import scheduling
from volumesvc.conductor.tasks import moves
from volumesvc.objects import base as objects_base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.states import task_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_migrate_server"


class ResizeTask(moves.MoveTask):
    def __init__(self, deps, context, *, instance_uuid, migration_id, host=None, again=False):
        super().__init__(deps, context, instance_uuid=instance_uuid, migration_id=migration_id,
                         host=host, again=again)

    def _destination(self, instance, migration, needs, local_root):
        same_host = (migration.migration_type == migration_obj.RESIZE
                     and self.conf.allow_resize_to_same_host and not self.host)
        if local_root and not same_host:
            raise exception.MigrationPreCheckError(
                reason=f"server {instance.uuid} boots from an image: its root disk "
                       "stays on its host, so it is only resized there")
        return self.destination(
            instance, needs, min_version=version.RESIZE_VERSION,
            flavor=migration.new_flavor or instance.flavor or {},
            hosts=(instance.host,) if local_root else None,
            exclude={} if same_host else None)

    def _execute(self):
        migration = migration_obj.get(self.db, self.context, self.migration_id)
        instance = self.server_on_its_source(task_states.RESIZE_PREP,
                                             min_version=version.RESIZE_VERSION,
                                             do="resize or migrate")
        bdms = bdm_obj.list_by_instance(self.db, self.context, instance.uuid)
        local_root = bdm_obj.has_local_root(bdms)
        dest = self._destination(instance, migration,
                                 scheduling.volume_needs(self.cinder, self.context, bdms),
                                 local_root)
        try:
            migration = migration_obj.save(self.db, self.context, migration.id, {
                "dest_compute": dest, "dest_node": dest, "dest_host": dest},
                expected_status=[migration_obj.PRE_MIGRATING])
        except exception.InvalidMigrationState as exc:
            return self.taken(exc)
        LOG.info("%s %s of %s: %s -> %s", migration.migration_type.capitalize(),
                 migration.uuid, instance.uuid, instance.host, dest)
        self.compute.resize_instance(self.context, host=instance.host,
                                     instance=instance.to_dict(),
                                     migration=migration.to_dict())
        return dest

    def rollback(self, exc):
        self.refuse(exc, task_state=task_states.RESIZE_PREP, event=EVENT,
                    expected_status=[migration_obj.PRE_MIGRATING])


def cleanup_source(deps, context, instance_uuid, migration_id):
    """After a confirm: the source removes what the server left there (best effort)."""
    migration = migration_obj.get(deps.db, context, migration_id)
    try:
        instance = instance_obj.get_by_uuid(deps.db, context, instance_uuid)
    except exception.InstanceNotFound:
        return
    if migration.source_compute and migration.source_compute != migration.dest_compute:
        deps.compute.confirm_resize(context, host=migration.source_compute,
                                    instance=instance.to_dict(),
                                    migration=migration.to_dict())


def revert(deps, context, instance_uuid, migration_id):
    """Cast the revert to the server's current (destination) compute."""
    migration = migration_obj.get(deps.db, context, migration_id)
    instance = instance_obj.get_by_uuid(deps.db, context, instance_uuid)
    deps.compute.revert_resize(context, host=instance.host, instance=instance.to_dict(),
                               migration=migration.to_dict())


def confirm_expired(deps, context):
    """Confirm the moves ``finished`` for longer than ``resize_confirm_window`` (Nova's
    automatic confirmation); 0 turns it off. Returns the confirmed migrations' ids."""
    window = deps.conf.resize_confirm_window
    if not window:
        return []
    cutoff = objects_base.utcnow() - datetime.timedelta(seconds=window)
    confirmed = []
    for migration in migration_obj.finished_before(deps.db, context, cutoff):
        try:
            migration_obj.confirm(deps.db, context, migration.id)
        except (exception.InvalidMigrationState, exception.UnexpectedTaskStateError,
                exception.InstanceInvalidState, exception.InstanceNotFound) as exc:
            LOG.info("Migration %s not confirmed by itself: %s", migration.uuid, exc)
            continue
        LOG.info("Confirmed %s %s of %s after %s s", migration.migration_type,
                 migration.uuid, migration.instance_uuid, window)
        confirmed.append(migration.id)
        try:
            cleanup_source(deps, context, migration.instance_uuid, migration.id)
        except Exception as exc:  # noqa: BLE001 - the files stay, the confirm stands
            LOG.warning("Source of migration %s not told: %s", migration.uuid, exc)
    return confirmed
