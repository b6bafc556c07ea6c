"""How a compute workflow reports on its work: instance-action events, faults, notifications."""

import contextlib
import time
import traceback as tb

from oslo_log import log as logging
from oslo_utils import timeutils

from volumesvc import exception

LOG = logging.getLogger(__name__)


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

    def notify(self, context, instance, action, phase, *, bdms=None, exc=None):
        """Versioned notification ``instance.<action>.<phase>``.

        The block-device part carries ``volume_type`` (spec 5), which Nova's
        payload does not.
        """
        payload = {
            "instance_uuid": instance["uuid"],
            "display_name": instance.get("display_name"),
            "tenant_id": instance.get("project_id"),
            "user_id": instance.get("user_id"),
            "host": self.host,
            "state": instance.get("vm_state"),
            "task_state": instance.get("task_state"),
            "power_state": instance.get("power_state"),
            "block_devices": [block_device_payload(b) for b in bdms or []
                              if b.get("volume_id") or b.get("destination_type") == "volume"],
            "timestamp": timeutils.utcnow().isoformat(),
        }
        if exc is not None:
            payload["fault"] = {"exception": type(exc).__name__,
                                "exception_message": message_of(exc)}
        event_type = f"instance.{action}.{phase}"
        try:
            if phase == "error":
                self.notifier.error(context, event_type, payload)
            else:
                self.notifier.info(context, event_type, payload)
        except Exception as err:  # noqa: BLE001 - notifications are best effort
            LOG.warning("Notification %s failed: %s", event_type, err)


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


def block_device_payload(bdm):
    return {
        "volume_id": bdm.get("volume_id"),
        "boot_index": bdm.get("boot_index"),
        "device_name": bdm.get("device_name"),
        "delete_on_termination": bool(bdm.get("delete_on_termination")),
        "tag": bdm.get("tag"),
        "volume_type": bdm.get("volume_type"),
        # API 2.106: the attachment's status after this phase (None: gone).
        "attach_status": bdm.get("attach_status"),
    }


def message_of(exc):
    if isinstance(exc, exception.VolumesvcException):
        return exc.format_message()
    return str(exc) or type(exc).__name__
