"""POST /os-server-external-events: news about servers (doc/source/contributor/contract.rst §7).

Cinder posts ``volume-extended`` after (2.51) or, with extend completion,
while (2.105, ours) it extends an attached volume; Neutron posts network
events; Ironic ``power-update``. Each event gets its own ``code``; the answer
is 200 when all were accepted and 207 when any failed, even all of them.
"""

from volumesvc.api import validation
from volumesvc.api.logic import external_events
from volumesvc.api.policies import server_external_events as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import server_external_events as schema


@validation.windows(validation.schema, schema.REQUEST_WINDOWS)
@validation.response_body_schema(schema.create_server_external_events_response_v2_1)
def create_server_external_events(req):
    """POST /os-server-external-events → 200, or 207 when any event failed.

    403 for a caller that is neither a service nor an admin; 400 for a body
    the version does not allow (an event name included).
    """
    authorize(req.context, policies.CREATE)
    conductor = req.deps.conductor
    router = external_events.EventRouter(req)
    accepted: dict[str, list[dict]] = {}  # server uuid -> wire events, in request order
    response = []
    for event in req.body["events"]:
        outcome = router.decide(event)
        response.append(dict(event, code=outcome.code,
                             status="completed" if outcome.accepted else "failed"))
        if outcome.accepted:
            router.record_action(event, outcome.instance)
            accepted.setdefault(outcome.instance.uuid, []).append(router.wire_event(event))
    for server_uuid, events in accepted.items():
        conductor.external_instance_event(req.context, instance_uuid=server_uuid,
                                          events=events)
    status = 200 if all(e["code"] == 200 for e in response) else 207
    return {"events": response}, status
