"""Rebuild of a volume-backed server on its compute host (API ``rebuild`` action).

The server keeps its identity and its volumes; what is rebuilt is the
domain. With the image the root volume already holds, the domain is simply
destroyed and created again from the same disks: the root volume keeps its
data. With a new image (API 2.93) Cinder rewrites the root volume first:

1. a new attachment without a connector replaces the root volume's
   connected one (saved in the BDM before the old one is deleted), so
   Cinder sees the volume ``reserved`` by this server at every moment and
   its ``os-reimage`` with ``reimage_reserved`` is allowed;
2. ``os-reimage`` (volume API 3.68), then the wait for Cinder's
   ``volume-reimaged`` external event, registered before the request so an
   early answer is not lost. The wait ends early when Cinder marks the
   volume ``error`` (a failed copy sends no event at all) and after
   ``[compute] reimage_timeout_per_gb`` seconds per GiB of image;
3. the root volume is connected again on this host and the new domain is
   spawned from it, then the attachment is completed.

Attached data volumes are never disconnected: QEMU lets go of them when the
domain is destroyed and the new domain opens them again.

A failure at any step puts the server in ERROR with a fault that says why,
as Nova does; the volumes stay attached to the server in Cinder (the root
one possibly without a connector: the attachment reconciliation connects it
here again, see :func:`connect_root`, and so does a further rebuild).

A compute that dies mid-rebuild leaves the task state behind and nothing
that would ever end it. When the compute starts again the reconciliation
(``compute/reconcile_runner.py``) hands such a server to
:meth:`Rebuilder.recover`, which ends it in ERROR with a fault saying the
rebuild was interrupted, as Nova's ``init_host`` does; the same pass then
puts the root volume's attachment right. A ``volume-reimaged`` event that
arrives afterwards finds nobody waiting and is logged and dropped
(``compute/events.py``).
"""

import math
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import encryption
from volumesvc.compute import events as events_mod
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import power_state, task_states, vm_states
from volumesvc.virt import block_device as virt_bd

LOG = logging.getLogger(__name__)

GiB = 1024 ** 3
# How often the wait for volume-reimaged looks at the volume's status.
STATUS_POLL_SECONDS = 2.0
# The task states of a rebuild on its compute, in order.
REBUILD_TASKS = (task_states.REBUILDING, task_states.REBUILD_BLOCK_DEVICE_MAPPING,
                 task_states.REBUILD_SPAWNING)


def root_bdm(bdms):
    """The boot volume's BDM (boot index 0, backed by a volume), or None."""
    for bdm in boot_volumes.volume_bdms(bdms):
        if bdm.boot_index == 0 and bdm.volume_id:
            return bdm
    return None


def connect_root(context, root, *, driver, cinder, conductor, keys, bdms):
    """Give Cinder this host's connector for the root's attachment and connect it here.

    For a root BDM whose connection a rebuild released (no connection info,
    the attachment ``reserved``); the BDM with the new connection info
    takes the root's place in ``bdms`` (the disks of the domain defined
    next) before it is saved, so the disk connected here is in the domain
    even when the save fails. Completing the attachment is the caller's: a
    rebuild does it once the new domain runs, the reconciliation at once.
    """
    connector = driver.get_volume_connector()
    info = cinder.attachment_update(context, root.attachment_id, connector,
                                    mountpoint=root.device_name)
    info["serial"] = root.volume_id
    plan = encryption.prepare(context, cinder=cinder, keys=keys, driver=driver,
                              connection_info=info)
    driver.connect_volume(info)
    encryption.open_volume(driver, info, plan)
    values = {"connection_info": bdm_mod.encode_connection_info(info)}
    bdm_mod.replace_in(bdms, root, root.replace(**values))
    conductor.bdm_update(context, bdm_uuid=root.uuid, values=values)


class Rebuilder:
    """Rebuilds volume-backed servers on one compute host."""

    def __init__(self, lifecycle, waiters):
        # NOTE: the lifecycle's collaborators (driver, conductor, Cinder,
        # Glance) and its run() with the event, notifications and fault.
        self.lifecycle = lifecycle
        self.conf = lifecycle.conf
        self.driver = lifecycle.driver
        self.conductor = lifecycle.conductor
        self.cinder = lifecycle.cinder
        self.glance = lifecycle.glance
        self.waiters = waiters

    def _update(self, context, uuid, values, expected=None):
        return compute_instances.update_instance(self.conductor, context, uuid, values, expected)

    def rebuild(self, context, instance, *, image_ref, reimage, preserve_ephemeral=False):
        """Destroy the domain, reimage the root volume if asked, spawn again.

        ``preserve_ephemeral`` changes nothing: a volume-backed server has no
        ephemeral disk on the host to keep or wipe.
        """
        uuid = instance["uuid"]
        was_stopped = instance.get("vm_state") == vm_states.STOPPED

        def work(bdms):
            # NOTE: the task is still ours (a compute restarted meanwhile may
            # have ended it): checked before the domain goes.
            self._update(context, uuid, {"task_state": task_states.REBUILDING},
                         expected=[task_states.REBUILDING])
            root = root_bdm(bdms)
            if root is None:
                raise exception.RebuildRootVolumeMissing(instance_uuid=uuid)
            driver_instance = compute_instances.driver_instance(instance)
            self.driver.destroy(driver_instance, boot_volumes.block_device_info(bdms))
            if reimage or not root.has_connection:
                root = self._release_root(context, uuid, bdms, root)
            if reimage:
                self._reimage(context, uuid, root, image_ref)
            self._update(context, uuid,
                         {"task_state": task_states.REBUILD_BLOCK_DEVICE_MAPPING},
                         expected=[task_states.REBUILDING])
            reconnected = self._connect_root(context, bdms, root)
            self._update(context, uuid, {"task_state": task_states.REBUILD_SPAWNING},
                         expected=[task_states.REBUILD_BLOCK_DEVICE_MAPPING])
            self.driver.spawn(driver_instance, boot_volumes.block_device_info(bdms))
            if reconnected:
                self.cinder.attachment_complete(context, root.attachment_id)
            values = {"vm_state": vm_states.ACTIVE, "task_state": None,
                      "power_state": power_state.RUNNING,
                      "launched_at": timeutils.utcnow().isoformat()}
            if was_stopped:
                # As Nova: a server rebuilt while stopped is stopped again.
                self.driver.power_off(driver_instance)
                values.update(vm_state=vm_states.STOPPED, power_state=power_state.SHUTDOWN)
            return self._update(context, uuid, values, expected=[task_states.REBUILD_SPAWNING])

        return self.lifecycle.run(context, instance, name="rebuild",
                                  event="compute_rebuild_instance", work=work,
                                  on_error={"vm_state": vm_states.ERROR, "task_state": None,
                                            "power_state": power_state.NOSTATE})

    # -- the root volume ----------------------------------------------------------

    def _release_root(self, context, uuid, bdms, root):
        """Swap the root's connected attachment for one without a connector.

        The new attachment is saved in the BDM before the old one is
        deleted: Cinder has the volume attached to this server throughout,
        ``reserved`` once the old attachment is gone. Returns the root BDM
        as saved (also put in its place in ``bdms``).
        """
        old = root.attachment_id
        info = root.connection_info if root.has_connection else None
        new = self.cinder.attachment_create(context, root.volume_id, uuid,
                                            mode=virt_bd.attach_mode(root))["id"]
        values = {"attachment_id": new, "connection_info": None}
        released = bdm_mod.replace_in(bdms, root, root.replace(**values))
        self.conductor.bdm_update(context, bdm_uuid=root.uuid, values=values)
        if root.has_connection:
            try:
                self.driver.disconnect_volume(info)
            except Exception as exc:  # noqa: BLE001 - the new attachment is in place
                LOG.warning("Could not disconnect root volume %s of %s: %s",
                            root.volume_id, uuid, exc)
        if old:
            self.cinder.attachment_delete(context.elevated(), old)
        return released

    def _timeout(self, context, image_ref):
        size = 0
        if self.glance is not None:
            size = int(self.glance.get(context, image_ref).get("size") or 0)
        return self.conf.compute.reimage_timeout_per_gb * max(1, math.ceil(size / GiB))

    def _reimage(self, context, uuid, root, image_ref):
        """os-reimage of the root volume, then wait for Cinder's volume-reimaged."""
        volume_id = root.volume_id
        timeout = self._timeout(context, image_ref)
        waiter = self.waiters.prepare(uuid, events_mod.VOLUME_REIMAGED, volume_id)
        try:
            try:
                self.cinder.reimage(context, volume_id, image_ref, reimage_reserved=True)
            except Exception as exc:
                raise exception.ReimageFailed(
                    volume_id=volume_id, image_id=image_ref,
                    reason=f"Cinder refused os-reimage: {exc}") from exc
            status = self._wait(context, waiter, volume_id, image_ref, timeout)
        finally:
            self.waiters.forget(uuid, events_mod.VOLUME_REIMAGED, volume_id)
        if status == "failed":
            raise exception.ReimageFailed(
                volume_id=volume_id, image_id=image_ref,
                reason="Cinder reported failure with a volume-reimaged event")
        LOG.info("Root volume %s of %s reimaged with image %s", volume_id, uuid, image_ref)

    def _wait(self, context, waiter, volume_id, image_ref, timeout):
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise exception.ReimageFailed(
                    volume_id=volume_id, image_id=image_ref,
                    reason=f"no volume-reimaged event from Cinder within {timeout} seconds")
            status = waiter.wait(min(STATUS_POLL_SECONDS, remaining))
            if status is not None:
                return status
            volume = self.cinder.get(context, volume_id)
            if volume.get("status") == "error":
                raise exception.ReimageFailed(
                    volume_id=volume_id, image_id=image_ref,
                    reason="Cinder put the volume in error status")

    def _connect_root(self, context, bdms, root):
        """Connect the root volume here again when it has no connection; True if it did.

        The root as saved takes its place in ``bdms`` (the new domain's disks).
        """
        if root.has_connection:
            return False
        connect_root(context, root, driver=self.driver, cinder=self.cinder,
                     conductor=self.conductor, keys=self.lifecycle.keys, bdms=bdms)
        return True

    # -- a compute that died mid-rebuild --------------------------------------------

    def recover(self, context, instance):
        """End a rebuild a dead process of this compute left: ERROR with a fault.

        Called by the reconciliation at start (instance lock held), before
        it reconciles the server's volumes; never for a rebuild this process
        was asked for (``ComputeManager``). Nothing is resumed: how far the
        dead rebuild got (domain destroyed, root reimaged) is not recorded,
        and the server's owner decides whether to rebuild again.
        """
        uuid = instance["uuid"]
        failure = exception.RebuildInterrupted(instance_uuid=uuid, host=self.conf.host,
                                               task_state=instance.get("task_state"))
        try:
            updated = self._update(context, uuid, {"vm_state": vm_states.ERROR,
                                                   "task_state": None,
                                                   "power_state": power_state.NOSTATE},
                                   expected=list(REBUILD_TASKS))
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            return
        LOG.warning("Instance %s was rebuilding (%s) when this compute stopped; it is now "
                    "ERROR", uuid, instance.get("task_state"))
        self.lifecycle.reporter.fault(context, uuid, failure)
        self.lifecycle.reporter.notify(context, updated or instance, "rebuild", "error",
                                       exc=failure)
