"""/os-keypairs: create (generate or import), list, show, delete.

Status codes per microversion as Nova's: create answers 200 before 2.2 and
201 from it, delete 202 before 2.2 and 204 from it. From 2.10 an admin may
act on another user's key pairs (``user_id`` in the body or the query);
before that, and for everybody else, it is the caller's own. 2.35 pages the
list; 2.92 takes imported keys only (``public_key`` required).
"""

from urllib.parse import urlencode

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.logic import keypairs as logic
from volumesvc.api.policies import keypairs as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import keypairs as schema
from volumesvc.api.views import flavors as flavor_views
from volumesvc.api.views import keypairs as views
from volumesvc.objects import keypair as keypair_obj


def _response(envelope, view):
    return validation.windows(validation.response_body_schema,
                              views.KEYPAIR.windows(envelope, view=view))


def _user_id(req, given=None):
    """The user whose key pairs the request is about (2.10: ``user_id``), authorized later."""
    if req.is_at_least(mv.V2_10_KEYPAIR_USER):
        return given or req.last("user_id") or req.context.user_id
    return req.context.user_id


def _authorize(req, rule, user_id):
    authorize(req.context, rule, {"user_id": user_id, "project_id": req.context.project_id})


@validation.windows(validation.schema, schema.CREATE_WINDOWS)
@_response(schema.one, views.CREATE)
def create_keypair(req):
    """POST /os-keypairs → 200 (201 from 2.2); 409 name taken; 403 over quota; 400 bad key."""
    body = req.body["keypair"]
    user_id = _user_id(req, body.get("user_id"))
    _authorize(req, policies.CREATE, user_id)
    key_type = body.get("type", logic.SSH)
    private_key = None
    public_key = body.get("public_key")
    if public_key is None:
        private_key, public_key = logic.generate(key_type, user_id)
    fingerprint = logic.fingerprint(key_type, public_key)
    keypair = keypair_obj.create(
        req.deps.db, req.context, req.conf,
        {"name": body["name"], "user_id": user_id, "public_key": public_key,
         "fingerprint": fingerprint, "type": key_type},
        project_id=req.context.project_id)
    status = 201 if req.is_at_least(mv.V2_2_KEYPAIR_TYPE) else 200
    return {"keypair": views.render(req, keypair, views.CREATE, private_key)}, status


def _limit(req):
    if not req.is_at_least(mv.V2_35_KEYPAIR_PAGING):
        return None
    max_limit = req.conf.api.max_limit
    return min(validation.bounded_int(req.last("limit", max_limit), "limit",
                                      code=errors.QUERY_INVALID), max_limit)


@validation.query_windows(schema.INDEX_QUERY_WINDOWS, strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.many, views.INDEX)
def list_keypairs(req):
    """GET /os-keypairs → 200 ``{"keypairs": [{"keypair": ...}]}`` (+ links from 2.35)."""
    user_id = _user_id(req)
    _authorize(req, policies.INDEX, user_id)
    limit = _limit(req)
    marker = req.last("marker") if req.is_at_least(mv.V2_35_KEYPAIR_PAGING) else None
    try:
        keypairs = keypair_obj.list_keypairs(req.deps.db, req.context, user_id,
                                             limit=limit, marker=marker)
    except exception.MarkerNotFound as exc:
        raise errors.APIError(400, exc.format_message(), errors.QUERY_INVALID) from exc
    body: dict = {"keypairs": [{"keypair": views.render(req, k, views.INDEX)}
                               for k in keypairs]}
    if limit and len(keypairs) == limit:
        params = {k: v for k, v in req.query.items() if k != "marker"}
        params["marker"] = keypairs[-1].name
        versioned, _ = flavor_views.prefixes(req)
        body["keypairs_links"] = [{"rel": "next", "href": (
            f"{versioned}/os-keypairs?{urlencode(params, doseq=True)}")}]
    return body, 200


@validation.query_windows(schema.SHOW_QUERY_WINDOWS)
@_response(schema.one, views.SHOW)
def show_keypair(req, keypair_name):
    """GET /os-keypairs/{name} → 200; 404 when the user has no such key pair."""
    user_id = _user_id(req)
    _authorize(req, policies.SHOW, user_id)
    keypair = keypair_obj.get_by_name(req.deps.db, req.context, user_id, keypair_name)
    return {"keypair": views.render(req, keypair, views.SHOW)}, 200


@validation.query_windows(schema.SHOW_QUERY_WINDOWS)
@validation.response_body_schema(None)
def delete_keypair(req, keypair_name):
    """DELETE /os-keypairs/{name} → 202 (204 from 2.2); 404 when unknown."""
    user_id = _user_id(req)
    _authorize(req, policies.DELETE, user_id)
    keypair_obj.destroy(req.deps.db, req.context, user_id, keypair_name)
    return None, 204 if req.is_at_least(mv.V2_2_KEYPAIR_TYPE) else 202
