"""Stop and start: find the server's compute and cast the work to it.

The API has set task_state (``powering-off``/``powering-on``) and recorded the
``stop``/``start`` action; the compute does the rest (``compute/lifecycle.py``).
A server without a host cannot get here through the contract §2 gates (a launched
server in ``active``/``error``/``stopped`` has one); if one does, its task is
cleared with a fault rather than left spinning.
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor.tasks import base
from volumesvc.objects import instance as instance_obj

LOG = logging.getLogger(__name__)


def cast_to_host(db, context, instance_uuid, send, *, event, **kwargs):
    """``send(context, host=, instance=, **kwargs)`` to the instance's host.

    Returns the instance, or None when it is gone, has no host or the cast
    cannot be sent (a compute RPC cap below 1.5): then its task_state is
    cleared with a fault and an Error ``event``, so the server is not left
    in a task forever.
    """
    try:
        instance = instance_obj.get_by_uuid(db, context, instance_uuid)
    except exception.InstanceNotFound:
        LOG.info("Instance %s is gone; %s dropped", instance_uuid, event)
        return None
    if not instance.host:
        exc = exception.InstanceInvalidState(instance_uuid=instance_uuid, attr="host",
                                             state=None, method=event)
        base.fail_instance(db, context, instance_uuid, exc, {"task_state": None},
                           event=event)
        return None
    try:
        send(context, host=instance.host, instance=instance.to_dict(), **kwargs)
    except Exception as exc:  # noqa: BLE001 - the bus, or a cap in [upgrade_levels] compute
        LOG.warning("Could not send %s for %s to %s: %s", event, instance_uuid,
                    instance.host, exc)
        base.fail_instance(db, context, instance_uuid, exc, {"task_state": None},
                           event=event)
        return None
    return instance


class CastTask(base.TaskBase):
    """A task that is one cast to the server's compute (``cast_to_host``).

    Subclasses name the compute RPC ``method``, the ``event`` recorded when
    it cannot be sent, and the cast's own arguments (``cast_kwargs``).
    """

    method = ""
    event = ""

    def cast_kwargs(self):
        return {}

    def _execute(self):
        return cast_to_host(self.db, self.context, self.instance_uuid,
                            getattr(self.compute, self.method), event=self.event,
                            **self.cast_kwargs())


class StopTask(CastTask):
    method = "stop_instance"
    event = "conductor_stop_instance"


class StartTask(CastTask):
    method = "start_instance"
    event = "conductor_start_instance"
