"""/os-quota-sets/{project_id} (show, detail, defaults, update, delete) and /limits.

Limits come from ``volumesvc/quota.py`` (the ``[quota]`` defaults, then the
project's rows, then the user's with ``?user_id=``); usage is counted from
the database at each request. Updating checks, unless ``force`` is true,
that no new limit is below what is already used, and that a user's limit
does not exceed the project's (Nova's 400s). Nova's network quotas are
shown before 2.36 with constant values and accepted but not stored.
"""

from oslo_utils import strutils

from volumesvc import quota
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.policies import quota_sets as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import quota_sets as schema
from volumesvc.api.views import quota_sets as views


def _response(envelope, view):
    return validation.windows(validation.response_body_schema,
                              views.QUOTA_SET.windows(envelope, view=view))


def _authorize(req, rule, project_id):
    authorize(req.context, rule, {"project_id": project_id, "user_id": req.context.user_id})


def _quota_set(req, project_id, view, with_usage=False):
    user_id = req.last("user_id")
    limits = quota.limits(req.deps.db, req.context, req.conf, project_id, user_id)
    usage = quota.usage(req.deps.db, req.context, project_id, user_id) if with_usage else None
    return {"quota_set": views.render(req, project_id, limits, usage, view)}, 200


@validation.query_schema(schema.user_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.one, views.SHOW)
def show_quota_set(req, tenant_id):
    """GET /os-quota-sets/{project_id}[?user_id=] → 200 with the limits."""
    project_id = tenant_id
    _authorize(req, policies.SHOW, project_id)
    return _quota_set(req, project_id, views.SHOW)


@validation.query_schema(schema.user_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.one, views.DETAIL)
def show_quota_set_detail(req, tenant_id):
    """GET /os-quota-sets/{project_id}/detail → 200 with in_use/limit/reserved per resource."""
    project_id = tenant_id
    _authorize(req, policies.DETAIL, project_id)
    return _quota_set(req, project_id, views.DETAIL, with_usage=True)


@validation.query_schema(schema.defaults_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.one, views.SHOW)
def show_quota_set_defaults(req, tenant_id):
    """GET /os-quota-sets/{project_id}/defaults → 200 with the ``[quota]`` defaults."""
    project_id = tenant_id
    _authorize(req, policies.DEFAULTS, project_id)
    return {"quota_set": views.render(req, project_id, quota.defaults(req.conf))}, 200


def _refuse_in_unified_mode(req):
    if quota.unified(req.conf):
        raise errors.APIError(
            400, "Quota limits are Keystone's unified limits here ([quota] driver = "
            "unified_limits): change them in Keystone (registered and project limits), "
            "not through os-quota-sets.", errors.BAD_REQUEST)


def _checked(req, project_id, user_id, body) -> dict:
    """The new limits to store, or 400 naming the first one that cannot be set."""
    force = strutils.bool_from_string(body.get("force", False))
    wanted = {name: validation.bounded_int(value, name, -1)
              for name, value in body.items() if name in quota.RESOURCES}
    used = quota.usage(req.deps.db, req.context, project_id, user_id)
    project = quota.limits(req.deps.db, req.context, req.conf, project_id)
    for name, limit in wanted.items():
        if not force and limit != quota.UNLIMITED and limit < used[name]:
            raise errors.APIError(400, f"Quota limit {limit} for {name} must be greater than "
                                  f"or equal to already used and reserved {used[name]}.",
                                  errors.BAD_REQUEST)
        maximum = project[name]
        if user_id is not None and maximum != quota.UNLIMITED and (
                limit == quota.UNLIMITED or limit > maximum):
            raise errors.APIError(400, f"Quota limit {limit} for {name} must be less than or "
                                  f"equal to {maximum}.", errors.BAD_REQUEST)
    return wanted


@validation.query_schema(schema.user_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@validation.windows(validation.schema, schema.UPDATE_WINDOWS)
@_response(schema.one, views.UPDATE)
def update_quota_set(req, tenant_id):
    """PUT /os-quota-sets/{project_id}[?user_id=] → 200 with the limits now in force (admin)."""
    project_id = tenant_id
    _authorize(req, policies.UPDATE, project_id)
    _refuse_in_unified_mode(req)
    user_id = req.last("user_id")
    wanted = _checked(req, project_id, user_id, req.body["quota_set"])
    quota.set_limits(req.deps.db, req.context, project_id, wanted, user_id)
    return _quota_set(req, project_id, views.UPDATE)


@validation.query_schema(schema.user_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@validation.response_body_schema(schema.delete_response_v2_1)
def delete_quota_set(req, tenant_id):
    """DELETE /os-quota-sets/{project_id}[?user_id=] → 202: back to the defaults (admin)."""
    project_id = tenant_id
    _authorize(req, policies.DELETE, project_id)
    _refuse_in_unified_mode(req)
    quota.delete_limits(req.deps.db, req.context, project_id, req.last("user_id"))
    return None, 202


@validation.query_schema(schema.limits_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@validation.windows(validation.response_body_schema,
                    views.ABSOLUTE.windows(schema.limits))
def show_limits(req):
    """GET /limits[?tenant_id=] → 200: the project's absolute limits and usage, no rates."""
    project_id = req.context.project_id
    _authorize(req, policies.LIMITS, project_id)
    if "tenant_id" in req.query:
        project_id = req.last("tenant_id")
        _authorize(req, policies.LIMITS_OTHER_PROJECT, project_id)
    limits = quota.limits(req.deps.db, req.context, req.conf, project_id)
    usage = quota.usage(req.deps.db, req.context, project_id)
    return {"limits": {"rate": [], "absolute": views.render_absolute(req, limits, usage)}}, 200
