"""Rebuild of a volume-backed server: cast the work to the server's compute.

The API has checked the request (volume-backed, the image), set task_state
``rebuilding`` and recorded the ``rebuild`` action. A rebuild stays on the
server's host, so there is nothing to schedule: the compute does the rest
(``compute/rebuild.py``). When the cast cannot be sent (no host) the task is
cleared with a fault and an Error ``conductor_rebuild_server`` event.
"""

from volumesvc.conductor.tasks import power

EVENT = "conductor_rebuild_server"


class RebuildTask(power.CastTask):
    method = "rebuild_instance"
    event = EVENT

    def __init__(self, deps, context, *, instance_uuid, image_ref, reimage,
                 preserve_ephemeral=False):
        super().__init__(deps, context, instance_uuid=instance_uuid)
        self.image_ref = image_ref
        self.reimage = reimage
        self.preserve_ephemeral = preserve_ephemeral

    def cast_kwargs(self):
        return {"image_ref": self.image_ref, "reimage": self.reimage,
                "preserve_ephemeral": self.preserve_ephemeral}
