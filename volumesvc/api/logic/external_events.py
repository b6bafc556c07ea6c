"""Each external event's fate (doc/source/contributor/contract.rst §7).

Why apart from the handler: the per-event outcome is a small state machine
(404 → 400 → 422 → accepted) that the handler only loops over.

The per-event ``code`` is 200 (accepted), 404 (no such server), 400 (``tag``
missing where it is the payload) or 422 (the server has no host). An
accepted event goes to the compute hosting the server through the conductor.
"""

import dataclasses

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.api import microversions as mv
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj

LOG = logging.getLogger(__name__)

V2_105_EXTEND_COMPLETION = mv.V2_105_EXTEND_COMPLETION

VOLUME_EXTENDED = "volume-extended"
# Events whose tag is their payload (the volume, the power state, the ARQ).
TAG_REQUIRED = frozenset({VOLUME_EXTENDED, "power-update", "accelerator-request-bound"})


@dataclasses.dataclass
class Outcome:
    code: int
    instance: object = None

    @property
    def accepted(self):
        return self.code == 200


class EventRouter:
    """Outcomes for the events of one request; caches the instances."""

    def __init__(self, req):
        self.req = req
        self.ctx = req.context
        self.db = req.deps.db
        # Reads across projects: the caller is a service or an admin (policy).
        self._read_ctx = req.context.elevated()
        self._instances = {}

    def _instance(self, server_uuid):
        if server_uuid not in self._instances:
            try:
                self._instances[server_uuid] = instance_obj.get_by_uuid(
                    self.db, self._read_ctx, server_uuid)
            except exception.InstanceNotFound:
                self._instances[server_uuid] = None
        return self._instances[server_uuid]

    def decide(self, event):
        """The Outcome of one event, in the order of the contract's table."""
        instance = self._instance(event["server_uuid"])
        if instance is None:
            return Outcome(404)
        name = event["name"]
        if name in TAG_REQUIRED and event.get("tag") is None:
            return Outcome(400, instance)
        if not instance.host:
            return Outcome(422, instance)
        return Outcome(200, instance)

    def record_action(self, event, instance):
        """volume-extended: the ``extend_volume`` action the compute's event joins."""
        if event["name"] != VOLUME_EXTENDED:
            return
        action_obj.action_start(self.db, self.ctx, instance.uuid, "extend_volume",
                                self.ctx.request_id, self.ctx.user_id, self.ctx.project_id)

    def wire_event(self, event):
        """What the compute gets: name, tag, status and whether to complete (2.105)."""
        return {"name": event["name"], "tag": event.get("tag"),
                "status": event.get("status", "completed"),
                "completion": (event["name"] == VOLUME_EXTENDED
                               and self.req.is_at_least(V2_105_EXTEND_COMPLETION))}
