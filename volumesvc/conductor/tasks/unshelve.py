"""Unshelve: place a shelved-offloaded server on a compute and cast the spawn.

The host is chosen and claimed as for a boot (``scheduling.place``): up, enabled,
with every capability the server's volumes need
(``supports_multiattach`` when one of them is multiattach), in the requested
availability zone or on the requested host (2.77/2.91). A ``SHELVED`` server
still has its host: the cast goes there.

A failure here (no host fits) leaves the server ``SHELVED_OFFLOADED`` with a
fault and an Error ``conductor_unshelve_instance`` event; nothing was
connected yet, so every volume keeps its attachment without a connector.
Failures on the compute are undone there (``compute/lifecycle.py``).
"""

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.conductor import scheduling
from volumesvc.conductor.tasks import base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import task_states, vm_states

LOG = logging.getLogger(__name__)

EVENT = "conductor_unshelve_instance"


class UnshelveTask(base.TaskBase):
    def __init__(self, deps, context, *, instance_uuid, availability_zone=None, host=None):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.availability_zone = availability_zone
        self.host = host
        self.placed = False  # host saved on an offloaded instance

    def _execute(self):
        try:
            instance = instance_obj.get_by_uuid(self.db, self.context, self.instance_uuid)
        except exception.InstanceNotFound:
            LOG.info("Instance %s was deleted before it was unshelved", self.instance_uuid)
            return None
        bdms = bdm_obj.list_by_instance(self.db, self.context, instance.uuid)
        host = instance.host
        if instance.vm_state != vm_states.SHELVED or not host:
            requirements = scheduling.Requirements(
                needs=tuple(scheduling.volume_needs(self.cinder, self.context, bdms)),
                availability_zone=self.availability_zone,
                hosts=(self.host,) if self.host else None,
                vcpus=int((instance.flavor or {}).get("vcpus") or 0),
                memory_mb=int((instance.flavor or {}).get("memory_mb") or 0))
            try:
                host = scheduling.place(self.conf, self.db, self.context, instance.uuid,
                                        requirements,
                                        expected_task_state=[task_states.UNSHELVING],
                                        probe=self.answers)
                instance = instance_obj.get_by_uuid(self.db, self.context, instance.uuid)
            except (exception.UnexpectedTaskStateError, exception.InstanceNotFound):
                LOG.info("Instance %s changed while unshelving (deleted?); not placing it",
                         self.instance_uuid)
                return None
            self.placed = True
        self.compute.unshelve_instance(self.context, host=host, instance=instance.to_dict(),
                                       bdms=[b.to_dict() for b in bdms])
        return host

    def rollback(self, exc):
        """Still offloaded, no task, a fault and an Error event that say why."""
        values = {"task_state": None}
        if self.placed:
            values.update(host=None, node=None)
        base.fail_instance(self.db, self.context, self.instance_uuid, exc, values,
                           event=EVENT)
        LOG.warning("Unshelve of instance %s failed in the conductor: %s",
                    self.instance_uuid, base.message_of(exc))

    def execute(self):
        # NOTE: a cast has nobody to raise to; the failure is in the instance.
        try:
            return super().execute()
        except Exception:  # noqa: BLE001
            return None
