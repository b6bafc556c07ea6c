"""Attach: name the device, create the Cinder attachment and the BDM, cast the compute once.

The same task serves every microversion: below 2.101 the API waits for it
(an RPC call) and answers with the device name chosen here; from 2.101 it is
cast and the API has already answered 202. The compute is told once (a
cast) and reports once (``bdm_update``: connection, ``attached`` and its
event); ``conductor/attach_watch.py`` casts again an attach that never
reached it. Either way a failure at any step removes exactly what the task
made (the Cinder attachment, the BDM) and is recorded as an
``attach_volume`` instance action event with the reason, so a 2.101 client
that only sees a 202 can still find out why. From API 2.106 the reason also
stays on a (deleted) ``error`` BDM that os-volume_attachments shows for
``[api] failed_attachment_ttl`` seconds.

A request whose first conductor died is run again with ``recovered=True``
(``conductor/volume_requests.py``): it goes on from what the dead run left
(``conductor/tasks/resume.py``) instead of starting over.
"""

import functools
import traceback

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor.tasks import base, offloaded, resume
from volumesvc.objects import attachment_status, compute_host
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import attach_states, vm_states
from volumesvc.virt import block_device as virt_bd
from volumesvc.volume import reserve

LOG = logging.getLogger(__name__)

ACTION = "attach_volume"
EVENT = "conductor_attach_volume"
COMPUTE_EVENT = "compute_attach_volume"


class AttachTask(base.TaskBase):
    def __init__(self, deps, context, *, instance_uuid, volume_id, device=None,
                 disk_bus=None, device_type=None, tag=None, delete_on_termination=False,
                 multiattach=None, read_only=False, recovered=False, since=None):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        # The conductor's shared answers to "is this compute up?" (one per task
        # without one: no answer is reused).
        self.up_cache = deps.up_cache or compute_host.UpCache(deps.conf)
        self.volume_id = volume_id
        self.multiattach = multiattach
        self.read_only = bool(read_only)
        self.request = {"device": device, "disk_bus": disk_bus, "device_type": device_type,
                        "tag": tag, "delete_on_termination": bool(delete_on_termination)}
        self.bdm = None
        self.attachment_id = None
        # Set once the Cinder attachment was asked for (it may exist unrecorded).
        self.creating_attachment = False
        self.action_recorded = False
        self.compute_event_started = False
        # A re-run of an accepted request (``since``: when it was accepted).
        self.recovered = recovered
        self.since = since
        # ``attach_watch.AttachWatch``: casts again an attach that did not arrive.
        self.watch = deps.watch

    def adopt(self, bdm):
        """Go on with ``bdm`` (a BDM object), made by an earlier run of this request.

        It and its Cinder attachment become this task's: a rollback removes them.
        """
        self.bdm = bdm.to_dict()
        self.attachment_id = bdm.attachment_id

    def record_action(self, host=None):
        """The ``attach_volume`` action; with ``host``, also the compute's event on it.

        Starting ``compute_attach_volume`` here saves the
        compute a conductor round trip per attach. A re-run whose first run
        recorded the action already leaves it as it is (the compute then
        starts its own event).
        """
        if self.recovered and resume.action_recorded(self):
            self.action_recorded = True
            return
        action_obj.action_start(self.db, self.context, self.instance_uuid, ACTION,
                                self.context.request_id, self.context.user_id,
                                self.context.project_id,
                                event=COMPUTE_EVENT if host else None, host=host)
        self.action_recorded = True
        self.compute_event_started = bool(host)

    def _execute(self):
        instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        if self.recovered:
            return resume.attach(self, instance)
        return self.run(instance)

    def run(self, instance):
        """The attach from the start (also what a re-run falls back on)."""
        if instance.vm_state == vm_states.SHELVED_OFFLOADED:
            return offloaded.attach(self, instance)
        if not instance.host:
            raise exception.InstanceInvalidState(
                instance_uuid=instance.uuid, attr="host", state=None, method="attach_volume")
        self._check_host_up(instance)
        if self.multiattach is None:
            self.multiattach = bool(self.cinder.get(self.context,
                                                    self.volume_id).get("multiattach"))
        self._check_capabilities(instance)
        # Step 1: the Cinder attachment (no connector yet: volume "reserved").
        # A multiattach volume busy with another server's attach is retried.
        # Step 2: the BDM, written once (``make_bdm``): its device name,
        # chosen under the instance row's lock so that concurrent attaches
        # never share one, and the attachment id.
        bus = self.request["disk_bus"] or virt_bd.DEFAULT_VOLUME_BUS
        self.make_bdm(instance,
                      lambda **kw: reserve.attachment_create(self.conf, self.cinder,
                                                             self.context, **kw),
                      device_name_for=functools.partial(virt_bd.get_next_device_name,
                                                        bus=bus),
                      disk_bus=bus, attach_status=attach_states.ATTACHING)
        # Step 3: the action, then the compute does the host side.
        self.record_action(host=instance.host)
        self.cast(instance)
        return self.bdm

    def cast(self, instance, recovered=False):
        """Cast the attach of ``self.bdm`` to the server's compute, and watch that it arrives."""
        self.compute.attach_volume(self.context, host=instance.host,
                                   instance=instance.to_dict(), bdm=self.bdm,
                                   multiattach=self.multiattach,
                                   event_started=self.compute_event_started,
                                   recovered=recovered)
        if self.watch is not None:
            self.watch.add(self.context, host=instance.host, bdm=self.bdm,
                           multiattach=self.multiattach)

    def _check_capabilities(self, instance):
        """Refuse what the server's compute cannot do, before anything is made.

        The compute publishes its driver's capabilities with every
        heartbeat (its service record); this is the one place an attach
        checks them.
        """
        tag, multiattach = self.request["tag"], self.multiattach
        if not (tag or multiattach):
            return
        host = compute_host.get(self.conf, self.db, self.context, instance.host,
                                cache=self.up_cache)
        if tag and not host.supports("supports_tagged_attach_volume"):
            raise exception.TaggedAttachmentNotSupported()
        if multiattach and not host.supports("supports_multiattach"):
            raise exception.MultiattachNotSupportedByVirtDriver(volume_id=self.volume_id)

    def make_bdm(self, instance, create, *, device_name_for, **values):
        """Create the Cinder attachment with ``create``, then the BDM that records it.

        The BDM is one insert (``bdm_obj.create_for_attach``) with its
        device name and the attachment id; ``values`` add to (or replace)
        the request's fields. A rollback deletes the attachment; a conductor
        that dies in between leaves a ``reserved`` attachment no BDM knows,
        which its re-run deletes (``resume.py``). A read-only request
        (2.108) asks Cinder for mode ``ro``. The BDM is read-only when asked
        or when Cinder made the attachment ``ro`` on its own (the volume's
        read-only flag): every later attachment for this BDM (shelve
        offload, swap) asks for ``ro`` again.
        """
        self.creating_attachment = True
        attachment = create(volume_id=self.volume_id, instance_uuid=instance.uuid,
                            mode="ro" if self.read_only else None)
        self.attachment_id = attachment["id"]
        request = self.request
        self.bdm = bdm_obj.create_for_attach(self.db, self.context, {
            "instance_uuid": instance.uuid, "source_type": "volume",
            "destination_type": "volume", "volume_id": self.volume_id,
            "disk_bus": request["disk_bus"], "device_type": request["device_type"] or "disk",
            "tag": request["tag"], "delete_on_termination": request["delete_on_termination"],
            "boot_index": None, "attachment_id": self.attachment_id,
            "requested_device": request["device"],
            "read_only": self.read_only or attachment.get("attach_mode") == "ro", **values},
            device_name_for=device_name_for,
            max_volumes=self.conf.compute.max_disk_devices_to_attach).to_dict()

    def _check_host_up(self, instance):
        """Refuse soon when the compute is down, instead of waiting out the call.

        Without this an attach to a dead host would hold a conductor thread
        (and below 2.101 an API worker) until the RPC call times out. A
        service that merely *looks* down is asked directly first: computes
        heartbeat through the conductor, so right after a conductor outage
        every compute looks down while it is fine (regression: queued
        2.101 attaches failed after a conductor restart). An *up* answer is
        reused for up to a second (``compute_host.UpCache``).
        """
        if compute_host.get(self.conf, self.db, self.context, instance.host,
                            cache=self.up_cache).up:
            return
        if not self.answers(instance.host):
            raise exception.ComputeHostDown(host=instance.host, instance_uuid=instance.uuid)

    def give_up(self, exc):
        """The request kept losing its conductor: undo what its runs made, with ``exc``.

        Nothing is undone when the attach got done after all (the BDM has
        its connection).
        """
        bdm = resume.live_bdm(self.db, self.context, self.instance_uuid, self.volume_id,
                              self.since)
        if bdm is not None and bdm.connection_info:
            return
        if bdm is not None:
            self.adopt(bdm)
        self.rollback(exc)

    def rollback(self, exc):
        if self.attachment_id:
            try:
                self.cinder.attachment_delete(self.context.elevated(), self.attachment_id)
            except exception.VolumesvcException as err:
                LOG.warning("Could not delete attachment %s: %s", self.attachment_id, err)
        elif self.creating_attachment and self.watch is not None:
            # Cinder may have made the attachment without telling us (its
            # answer was lost): deleted once it would be stale, if no BDM
            # claims it by then.
            self.watch.release_later(self)
        message = exc.format_message() if isinstance(
            exc, exception.VolumesvcException) else str(exc)
        self._keep_failure(exc, message)
        try:
            if not self.action_recorded:
                self.record_action()
            if self.compute_event_started:
                # The cast never left: the compute's event will not be finished there.
                action_obj.event_finish(
                    self.db, self.context, self.instance_uuid, self.context.request_id,
                    COMPUTE_EVENT, result="Error", details=message)
            action_obj.event_start(self.db, self.context, self.instance_uuid,
                                   self.context.request_id, EVENT)
            action_obj.event_finish(
                self.db, self.context, self.instance_uuid, self.context.request_id, EVENT,
                result="Error", traceback=traceback.format_exc(),
                details=f"Attaching volume {self.volume_id} failed: {message}")
        except exception.NotFound:
            pass  # the instance is gone: nothing to report on
        LOG.info("Attach of volume %s to %s failed and was rolled back: %s",
                 self.volume_id, self.instance_uuid, exc)

    def _keep_failure(self, exc, message):
        """Delete the reserved BDM, kept as the ``error`` entry of API 2.106.

        An attach refused before any device was reserved gets such an entry
        too (with no device), unless the refusal was that the volume is
        attached already: the live attachment is what the client should see.
        """
        if self.bdm is None and isinstance(exc, exception.VolumeAlreadyAttached):
            return
        try:
            attachment_status.record_failed_attach(
                self.db, self.context, instance_uuid=self.instance_uuid,
                volume_id=self.volume_id, bdm_uuid=self.bdm["uuid"] if self.bdm else None,
                code=attach_states.fault_code(exc), message=message)
        except exception.NotFound:
            pass
        except Exception as err:  # noqa: BLE001 - the rollback itself must finish
            LOG.warning("Could not keep the failed attach of %s to %s: %s",
                        self.volume_id, self.instance_uuid, err)
