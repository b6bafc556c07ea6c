"""How a compute workflow reports on its work: instance-action events, faults, notifications."""

import contextlib
import time
import traceback as tb

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.notifications import base as notify_base
from volumesvc.notifications import instance as notify_instance

LOG = logging.getLogger(__name__)

# Actions whose notification names a volume (InstanceActionVolume*Payload).
_VOLUME_ACTIONS = ("volume_attach", "volume_detach", "volume_swap")


class ComputeReporter:
    """Reports progress and failures through the conductor and the notifier.

    One per compute process; it holds no state about instances.
    """

    def __init__(self, conductor, notifier, host, metrics=None):
        self.conductor = conductor
        self.notifier = notifier
        self.host = host
        # compute/metrics.py: every event is also an operation's count and duration.
        self.metrics = metrics

    @contextlib.contextmanager
    def event(self, context, instance_uuid, event, started=False):
        """Record instance-action event ``event`` (e.g. compute_attach_volume).

        Success or Error with the traceback, so a client polling
        os-instance-actions sees *why* something failed. The event needs the
        action the API or conductor started under ``context.request_id``;
        without one (internal work) nothing is recorded.

        ``started``: the caller's caller started the event already (the
        conductor, with the action): only finish it.

        Yields an :class:`EventScope`: work whose last step is a conductor
        call anyway may have that call finish the event (``success()``,
        ``bdm_update(finish_event=...)``) and say so (``reported``), saving a
        round trip.
        """
        request_id = context.request_id
        started = started or self._safe(self.conductor.action_event_start, context,
                                        instance_uuid=instance_uuid, request_id=request_id,
                                        event=event, host=self.host)
        scope = EventScope(instance_uuid, request_id, event, started)
        began = time.monotonic()
        try:
            yield scope
        except Exception as exc:
            if self.metrics is not None:
                self.metrics.operation_done(event, "error", began)
            if started:
                self._safe(self.conductor.action_event_finish, context,
                           instance_uuid=instance_uuid, request_id=request_id,
                           event=event, result="Error", traceback=tb.format_exc(),
                           details=message_of(exc))
            raise
        if self.metrics is not None:
            self.metrics.operation_done(event, "success", began)
        if started and not scope.reported:
            self._safe(self.conductor.action_event_finish, context,
                       instance_uuid=instance_uuid, request_id=request_id, event=event,
                       result="Success")

    def record(self, context, instance_uuid, event, *, result, details):
        """Record a finished event with ``details`` on the action of ``context.request_id``."""
        if self._safe(self.conductor.action_event_start, context, instance_uuid=instance_uuid,
                      request_id=context.request_id, event=event, host=self.host):
            self._safe(self.conductor.action_event_finish, context,
                       instance_uuid=instance_uuid, request_id=context.request_id,
                       event=event, result=result, details=details)

    def _safe(self, method, context, **kwargs):
        try:
            method(context, **kwargs)
            return True
        except exception.NotFound:
            return False
        except Exception as exc:  # noqa: BLE001 - reporting must not break the work
            LOG.warning("Could not record %s for %s: %s", method.__name__,
                        kwargs.get("instance_uuid"), exc)
            return False

    def fault(self, context, instance_uuid, exc):
        """Record an instance fault (shown by the API when the server is ERROR)."""
        code = 400 if isinstance(exc, exception.Invalid) else 500
        self._safe(self.conductor.instance_fault_create, context,
                   instance_uuid=instance_uuid, code=code, message=message_of(exc)[:255],
                   details=tb.format_exc(), host=self.host)

    def notify(self, context, instance, action, phase, *, bdms=None, exc=None,
               volume_id=None, new_volume_id=None):
        """Nova's versioned notification ``instance.<action>.<phase>`` (``notifications/``).

        ``bdms``: the block devices the work is about (for a volume action
        the one volume; Nova lists all of the server's, which would cost a
        conductor call per notification). ``volume_id`` defaults to the one
        BDM's (attach, detach); a swap names both volumes. The payload is
        built from the BDMs' wire dicts, as the conductor's notifications are.
        """
        if volume_id is None and action in _VOLUME_ACTIONS:
            volume_id = next((b.volume_id for b in bdms or ()), None)
        wire = None if bdms is None else bdm_mod.to_wire_list(bdms)
        payload = notify_instance.action_payload(
            context, instance, action, bdms=wire, exc=exc, volume_id=volume_id,
            new_volume_id=new_volume_id)
        notify_base.emit(self.notifier, context, f"instance.{action}.{phase}", payload,
                         notify_base.ERROR if phase == "error" else notify_base.INFO)


class EventScope:
    """One started (or not) instance-action event, as ``ComputeReporter.event`` yields it."""

    def __init__(self, instance_uuid, request_id, event, started):
        self.instance_uuid = instance_uuid
        self.request_id = request_id
        self.event = event
        self.started = started
        # Set when another conductor call already finished the event Success.
        self.reported = False

    def success(self):
        """The Success finish for a conductor call to carry, or None (not started)."""
        if not self.started:
            return None
        return {"instance_uuid": self.instance_uuid, "request_id": self.request_id,
                "event": self.event, "result": "Success"}


def message_of(exc):
    if isinstance(exc, exception.VolumesvcException):
        return exc.format_message()
    return str(exc) or type(exc).__name__
