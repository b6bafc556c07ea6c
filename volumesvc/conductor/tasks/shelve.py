"""Shelve and offload: cast to the server's compute; offload old shelved servers.

``[DEFAULT] shelved_offload_time`` decides what a shelve does: 0 (the
default, Nova's for volume-backed servers) offloads as part of it, -1 never
offloads by itself, a positive number lets :func:`offload_expired` (a
conductor periodic task) offload servers shelved for longer than that.
"""

import datetime

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor.tasks import power
from volumesvc.objects import base as objects_base
from volumesvc.objects import instance as instance_obj
from volumesvc.states import task_states, vm_states

LOG = logging.getLogger(__name__)


class ShelveTask(power.CastTask):
    method = "shelve_instance"
    event = "conductor_shelve_instance"

    def cast_kwargs(self):
        return {"offload": self.conf.shelved_offload_time == 0}


class ShelveOffloadTask(power.CastTask):
    method = "shelve_offload_instance"
    event = "conductor_shelve_offload_instance"


def offload_expired(conf, db, compute_rpcapi, context):
    """Offload every server shelved (no task) for over ``shelved_offload_time`` seconds.

    The task_state is taken with a compare-and-swap, so a user's unshelve or
    delete that got there first wins. Returns the offloaded uuids.
    """
    if conf.shelved_offload_time <= 0:
        return []
    oldest = objects_base.utcnow() - datetime.timedelta(seconds=conf.shelved_offload_time)
    offloaded = []
    for instance in instance_obj.list_instances(db, context, vm_state=vm_states.SHELVED):
        if instance.task_state is not None or not instance.host or (
                instance.updated_at and instance.updated_at > oldest):
            continue
        try:
            instance = instance_obj.save(
                db, context, instance.uuid, {"task_state": task_states.SHELVING_OFFLOADING},
                expected_task_state=[None])
        except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
            continue
        LOG.info("Offloading %s, shelved since %s", instance.uuid, instance.updated_at)
        compute_rpcapi.shelve_offload_instance(context, host=instance.host,
                                               instance=instance.to_dict())
        offloaded.append(instance.uuid)
    return offloaded
