"""Each external event's fate (doc/source/contributor/contract.rst §7, the gate of §12).

Why apart from the handler: the per-event outcome is a small state machine
(404 → 400 → 422 → rolling-upgrade gate → accepted) that the handler only
loops over, and the gate talks to Cinder.

The per-event ``code`` is 200 (accepted), 404 (no such server), 400 (``tag``
missing where it is the payload) or 422 (the server has no host, or its
compute is too old to take the event). An accepted event goes to the
compute hosting the server through the conductor.
"""

import dataclasses

from oslo_log import log as logging

from volumesvc import binaries, exception
from volumesvc.api import microversions as mv
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import service as service_obj
from volumesvc.version import MIN_COMPUTE_EXTEND_COMPLETION

LOG = logging.getLogger(__name__)

V2_105_EXTEND_COMPLETION = mv.V2_105_EXTEND_COMPLETION

VOLUME_EXTENDED = "volume-extended"
# Events whose tag is their payload (the volume, the power state, the ARQ).
TAG_REQUIRED = frozenset({VOLUME_EXTENDED, "power-update", "accelerator-request-bound"})
# NOTE: service version 4 is the first compute with external_instance_event
# at all, and the first that completes extends; one threshold serves both.
MIN_COMPUTE_EVENTS = MIN_COMPUTE_EXTEND_COMPLETION
EXTENDING = "extending"


@dataclasses.dataclass
class Outcome:
    code: int
    instance: object = None

    @property
    def accepted(self):
        return self.code == 200


class EventRouter:
    """Outcomes for the events of one request; caches instances and compute versions."""

    def __init__(self, req):
        self.req = req
        self.ctx = req.context
        self.db = req.deps.db
        # Reads across projects: the caller is a service or an admin (policy).
        self._read_ctx = req.context.elevated()
        self._instances = {}
        self._versions = {}

    def _instance(self, server_uuid):
        if server_uuid not in self._instances:
            try:
                self._instances[server_uuid] = instance_obj.get_by_uuid(
                    self.db, self._read_ctx, server_uuid)
            except exception.InstanceNotFound:
                self._instances[server_uuid] = None
        return self._instances[server_uuid]

    def _compute_version(self, host):
        if host not in self._versions:
            try:
                service = service_obj.get_by_host_and_binary(self.db, self._read_ctx, host,
                                                             binaries.COMPUTE)
                self._versions[host] = service.version or 0
            except exception.NotFound:
                self._versions[host] = 0
        return self._versions[host]

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
        version = self._compute_version(instance.host)
        if version < MIN_COMPUTE_EVENTS:
            LOG.warning("Event %s-%s for server %s dropped: compute %s has service version "
                        "%d, external events need %d", name, event.get("tag"),
                        instance.uuid, instance.host, version, MIN_COMPUTE_EVENTS)
            if name == VOLUME_EXTENDED and self.req.is_at_least(V2_105_EXTEND_COMPLETION):
                self._complete_with_error(event["tag"], instance)
            return Outcome(422, instance)
        return Outcome(200, instance)

    def _complete_with_error(self, volume_id, instance):
        """Spec 3 gate: a too-old compute cannot finish the extend, so Cinder rolls back."""
        cinder = self.req.deps.cinder
        try:
            volume = cinder.get(self.ctx, volume_id)
            if volume.get("status") != EXTENDING:
                return
            LOG.warning("Completing the extend of volume %s with error: compute %s of "
                        "server %s is too old to resize it", volume_id, instance.host,
                        instance.uuid)
            cinder.extend_volume_completion(self.ctx, volume_id, True)
        except Exception as exc:  # noqa: BLE001 - the event is already answered 422
            LOG.error("Could not complete the extend of volume %s with error: %s",
                      volume_id, exc)

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
