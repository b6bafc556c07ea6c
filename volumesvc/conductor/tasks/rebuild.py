"""Rebuild of a volume-backed server: cast the work to the server's compute.

The API has checked the request (volume-backed, the image), set task_state
``rebuilding`` and recorded the ``rebuild`` action. A rebuild stays on the
server's host, so there is nothing to schedule: the compute does the rest
(``compute/rebuild.py``). When the cast cannot be sent (no host) the task is
cleared with a fault and an Error ``conductor_rebuild_server`` event.
"""

from volumesvc.conductor.tasks import power

EVENT = "conductor_rebuild_server"


def rebuild(db, compute_rpcapi, context, instance_uuid, *, image_ref, reimage,
            preserve_ephemeral=False):
    return power.cast_to_host(db, context, instance_uuid, compute_rpcapi.rebuild_instance,
                              event=EVENT, image_ref=image_ref, reimage=reimage,
                              preserve_ephemeral=preserve_ephemeral)
