"""/servers/{id}/os-instance-actions: what happened to a server, newest first.

Per microversion (doc/source/contributor/contract.rst §9): 2.21 actions of deleted servers; 2.51
owners see events (without traceback); 2.58 ``updated_at`` plus
limit/marker/changes-since; 2.62 events gain ``hostId`` (and ``host`` for
admins); 2.66 changes-before; 2.84 events gain ``details``.
"""

from urllib.parse import urlencode

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.logic import server_filters
from volumesvc.api.policies import instance_actions as policies
from volumesvc.api.policy import authorize
from volumesvc.api.request import base_url, get_instance
from volumesvc.api.schemas import instance_actions as schema
from volumesvc.api.views import instance_actions as views
from volumesvc.objects import instance_action as action_obj


def _can(req, rule, project_id) -> bool:
    ctx = req.context
    return req.deps.enforcer.authorize(rule, {"project_id": project_id}, ctx,
                                       do_raise=False)


def _instance(req, server_id):
    # 2.21: actions of deleted servers stay visible.
    return get_instance(req, server_id,
                        read_deleted="yes" if req.is_at_least(mv.V2_21_DELETED_ACTIONS) else None)


def _paginate(req, actions):
    """2.58: marker (a request id), changes-since/-before on updated_at, limit."""
    marker = req.last("marker")
    if marker is not None:
        ids = [a.request_id for a in actions]
        if marker not in ids:
            raise errors.APIError(400, f"Marker {marker} could not be found.",
                                  errors.QUERY_INVALID)
        actions = actions[ids.index(marker) + 1:]
    since = server_filters.parse_time(req, "changes-since")
    before = server_filters.parse_time(req, "changes-before")
    if since and before and since > before:
        raise errors.APIError(400, "The value of changes-since must be less than or equal "
                              "to changes-before.", errors.QUERY_INVALID)
    if since:
        actions = [a for a in actions if views.updated_at(a) >= since]
    if before:
        actions = [a for a in actions if views.updated_at(a) <= before]
    max_limit = req.conf.api.max_limit
    limit = min(validation.bounded_int(req.last("limit", max_limit), "limit",
                                       code=errors.QUERY_INVALID), max_limit)
    return actions[:limit], limit


def _next_links(req, server_id, actions, limit):
    if not limit or len(actions) != limit:
        return []
    params = {k: v for k, v in req.query.items() if k != "marker"}
    params["marker"] = actions[-1].request_id
    project = f"/{req.project_id}" if req.project_id else ""
    href = (f"{base_url(req.conf)}/v2.1{project}/servers/{server_id}/os-instance-actions?"
            f"{urlencode(params, doseq=True)}")
    return [{"rel": "next", "href": href}]


# Nova's 2.58 query schema is strict: unknown keys are a 400 from there on.
@validation.query_windows(schema.LIST_QUERY_WINDOWS, strict_from=mv.V2_58_ACTION_PAGING)
@validation.windows(validation.response_body_schema,
                    views.ACTION.windows(schema.list_instance_actions_response))
def list_instance_actions(req, server_id):
    """GET /servers/{id}/os-instance-actions → 200; 404 unknown server; 400 bad marker."""
    authorize(req.context, policies.LIST)
    instance = _instance(req, server_id)
    actions = action_obj.list_actions(req.deps.db, req.context, instance.uuid)
    links = []
    if req.is_at_least(mv.V2_58_ACTION_PAGING):
        actions, limit = _paginate(req, actions)
        links = _next_links(req, server_id, actions, limit)
    body = {"instanceActions": [views.action(req, a) for a in actions]}
    if links:
        body["links"] = links
    return body, 200


@validation.query_schema(schema.show_instance_action_query_v2_1)
@validation.windows(validation.response_body_schema, views.ACTION.windows(
    schema.show_instance_action_response, view=views.SHOW))
def show_instance_action(req, server_id, request_id):
    """GET /servers/{id}/os-instance-actions/{request_id} → 200 with events.

    Events: always for admins (with traceback, and host from 2.62); for
    other readers from 2.51, without traceback. 404 unknown server or action.
    """
    authorize(req.context, policies.SHOW)
    instance = _instance(req, server_id)
    try:
        action = action_obj.get_action(req.deps.db, req.context, instance.uuid, request_id)
    except exception.InstanceActionNotFound:
        raise exception.NotFound(f"Action {request_id} not found") from None
    see_all = _can(req, policies.EVENTS, instance.project_id)
    shown = see_all or req.is_at_least(mv.V2_51_VOLUME_EXTENDED)
    details = shown and req.is_at_least(mv.V2_84_EVENT_DETAILS) and _can(
        req, policies.EVENTS_DETAILS,
                                                        instance.project_id)
    body = views.action_with_events(
        req, action, events=action.events if shown else None, see_all=see_all,
        details=details, project_id=action.project_id or instance.project_id)
    return {"instanceAction": body}, 200
