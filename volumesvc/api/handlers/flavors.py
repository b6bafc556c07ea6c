"""/flavors: list, detail, show (everyone); create and delete (admin).

Shapes per microversion: 2.55 ``description``; 2.61 ``extra_specs`` (when
the extra-specs policy allows); 2.75 ``swap`` is always an integer (``""``
for 0 before) and unknown query parameters give 400.
"""

import uuid
from urllib.parse import urlencode

from oslo_utils import strutils

from volumesvc import exception
from volumesvc.api import errors, validation
from volumesvc.api import microversions as mv
from volumesvc.api.policies import flavors as policies
from volumesvc.api.policy import authorize
from volumesvc.api.schemas import flavors as schema
from volumesvc.api.views import flavors as views
from volumesvc.objects import flavor as flavor_obj


def _can(req, rule) -> bool:
    """A policy check that only decides what to show (never a 403)."""
    ctx = req.context
    return req.deps.enforcer.authorize(
        rule, {"project_id": ctx.project_id, "user_id": ctx.user_id}, ctx, do_raise=False)


def _show_extra_specs(req) -> bool:
    """2.61 extra_specs, when the extra-specs policy allows."""
    return req.is_at_least(mv.V2_61_FLAVOR_EXTRA_SPECS) and _can(req, policies.EXTRA_SPECS_INDEX)


def _response(envelope, view=views.DETAIL):
    return validation.windows(validation.response_body_schema,
                              views.FLAVOR.windows(envelope, view=view))


def _int_filter(req, key):
    value = req.last(key)
    if value is None:
        return None
    try:
        # NOTE: bounded to the column, or the database overflows (500).
        return validation.bounded_int(value, key, 0, validation.MAX_INT)
    except errors.APIError:
        raise errors.APIError(400, f"Invalid {key} filter [{value}]",
                              errors.QUERY_INVALID) from None


def _is_public_filter(req):
    """Admins choose (default public only, ``none`` for all); others see public ones."""
    if not req.context.is_admin:
        return True
    value = req.last("is_public")
    if value is None:
        return True
    if value.lower() == "none":
        return None
    try:
        return strutils.bool_from_string(value, strict=True)
    except ValueError:
        raise errors.APIError(400, f"Invalid is_public filter [{value}]",
                              errors.QUERY_INVALID) from None


def _sort_value(key):
    def value(flavor):
        item = getattr(flavor, key, None)
        return (item is None, item if item is not None else 0)
    return value


def _page(req):
    """The flavors of one page: filtered, sorted, after ``marker``, up to ``limit``.

    NOTE: sorted here rather than in SQL: there are a handful of flavors
    and any of Nova's sort keys must work.
    """
    ctx = req.context
    flavors = flavor_obj.list_flavors(
        req.deps.db, ctx, is_public=_is_public_filter(req),
        min_memory_mb=_int_filter(req, "minRam"), min_root_gb=_int_filter(req, "minDisk"),
        include_disabled=ctx.is_admin)
    sort_value = _sort_value(req.last("sort_key") or "flavorid")
    flavors.sort(key=lambda f: (sort_value(f), f.id), reverse=req.last("sort_dir") == "desc")
    marker = req.last("marker")
    if marker is not None:
        ids = [f.flavorid for f in flavors]
        if marker not in ids:
            raise errors.APIError(400, f"marker [{marker}] not found", errors.QUERY_INVALID)
        flavors = flavors[ids.index(marker) + 1:]
    max_limit = req.conf.api.max_limit
    limit = min(validation.bounded_int(req.last("limit", max_limit), "limit",
                                       code=errors.QUERY_INVALID), max_limit)
    return flavors[:limit], limit


def _collection(req, flavors, limit, path, items) -> dict:
    body = {"flavors": items}
    if limit and len(flavors) == limit:
        params = {k: v for k, v in req.query.items() if k != "marker"}
        params["marker"] = flavors[-1].flavorid
        versioned, _ = views.prefixes(req)
        body["flavors_links"] = [{"rel": "next", "href":
                                  f"{versioned}/{path}?{urlencode(params, doseq=True)}"}]
    return body


@validation.query_schema(schema.list_flavors_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.many, views.BRIEF)
def list_flavors(req):
    """GET /flavors → 200: id, name, links (+ description from 2.55)."""
    authorize(req.context, policies.LIST)
    flavors, limit = _page(req)
    return _collection(req, flavors, limit, "flavors",
                       [views.brief(req, f) for f in flavors]), 200


@validation.query_schema(schema.list_flavors_query_v2_1, strict_from=mv.V2_75_STRICT_QUERY)
@_response(schema.many)
def list_flavors_detail(req):
    """GET /flavors/detail → 200 with every flavor's details (see module docstring)."""
    authorize(req.context, policies.LIST)
    flavors, limit = _page(req)
    show_extra_specs = _show_extra_specs(req)
    return _collection(req, flavors, limit, "flavors/detail",
                       [views.detail(req, f, show_extra_specs) for f in flavors]), 200


@validation.query_schema(schema.show_flavor_query_v2_1)
@_response(schema.one)
def show_flavor(req, flavor_id):
    """GET /flavors/{id} → 200; 404 when unknown (or private, for non-admins)."""
    authorize(req.context, policies.SHOW)
    flavor = flavor_obj.get_by_flavorid(req.deps.db, req.context, flavor_id)
    if not flavor.is_public and not req.context.is_admin:
        raise exception.FlavorNotFound(flavor_id=flavor_id)
    return {"flavor": views.detail(req, flavor, _show_extra_specs(req))}, 200


def _visible_flavor(req, flavor_id):
    flavor = flavor_obj.get_by_flavorid(req.deps.db, req.context, flavor_id)
    if not flavor.is_public and not req.context.is_admin:
        raise exception.FlavorNotFound(flavor_id=flavor_id)
    return flavor


@validation.query_schema(schema.list_flavor_extra_specs_query_v2_1,
                         strict_from=mv.V2_75_STRICT_QUERY)
@validation.response_body_schema(schema.list_flavor_extra_specs_response_v2_1,
                                 mv.V2_1_BASE)
def list_flavor_extra_specs(req, flavor_id):
    """GET /flavors/{id}/os-extra_specs → 200 ``{"extra_specs": {...}}``."""
    authorize(req.context, policies.EXTRA_SPECS_INDEX)
    flavor = _visible_flavor(req, flavor_id)
    return {"extra_specs": dict(flavor.extra_specs or {})}, 200


@validation.query_schema(schema.list_flavor_extra_specs_query_v2_1,
                         strict_from=mv.V2_75_STRICT_QUERY)
@validation.response_body_schema(schema.show_flavor_extra_spec_response_v2_1, mv.V2_1_BASE)
def show_flavor_extra_spec(req, flavor_id, key):
    """GET /flavors/{id}/os-extra_specs/{key} → 200 ``{key: value}``; 404 when unset."""
    authorize(req.context, policies.EXTRA_SPECS_SHOW)
    specs = _visible_flavor(req, flavor_id).extra_specs or {}
    if key not in specs:
        raise exception.NotFound(f"Flavor {flavor_id} has no extra specs with key {key}.")
    return {key: specs[key]}, 200


def _int_value(body, key, name, minimum, default=None):
    return validation.bounded_int(body.get(key, default), name, minimum)


def _flavorid(body) -> str:
    """The id as stored: a JSON number becomes its string form (as in Nova)."""
    flavorid = body.get("id")
    if flavorid is None:
        return str(uuid.uuid4())
    if not isinstance(flavorid, str):
        # NOTE: never through float(): an integer of 400 digits overflows it.
        if isinstance(flavorid, float) and flavorid.is_integer():
            flavorid = int(flavorid)
        flavorid = str(flavorid)
        if len(flavorid) > 255:
            raise errors.APIError(400, "Invalid input for field/attribute id: it must be "
                                  "at most 255 characters.", errors.SCHEMA_INVALID)
    return flavorid


def _rxtx_factor(body) -> float:
    """A finite positive float: ``"9"*400`` would otherwise be stored as infinity."""
    value = float(body.get("rxtx_factor", 1.0))
    if not 0 < value <= schema.MAX_RXTX_FACTOR:
        raise errors.APIError(400, "Invalid input for field/attribute rxtx_factor: it must be "
                              f"> 0 and <= {schema.MAX_RXTX_FACTOR}.", errors.SCHEMA_INVALID)
    return value


def _create_values(body) -> dict:
    return {
        "flavorid": _flavorid(body),
        "name": body["name"],
        "memory_mb": _int_value(body, "ram", "ram", 1),
        "vcpus": _int_value(body, "vcpus", "vcpus", 1),
        "root_gb": _int_value(body, "disk", "disk", 0),
        "ephemeral_gb": _int_value(body, "OS-FLV-EXT-DATA:ephemeral", "ephemeral", 0, 0),
        "swap": _int_value(body, "swap", "swap", 0, 0),
        "rxtx_factor": _rxtx_factor(body),
        "is_public": strutils.bool_from_string(
            body.get("os-flavor-access:is_public", True), strict=True),
        "description": body.get("description"),
    }


@validation.windows(validation.schema, schema.CREATE_WINDOWS)
@_response(schema.one)
def create_flavor(req):
    """POST /flavors → 200 with the flavor (admin); 409 when the name or id is taken."""
    authorize(req.context, policies.CREATE)
    flavor = flavor_obj.create(req.deps.db, req.context, _create_values(req.body["flavor"]))
    return {"flavor": views.detail(req, flavor, _show_extra_specs(req))}, 200


@validation.response_body_schema(schema.delete_flavor_response_v2_1)
def delete_flavor(req, flavor_id):
    """DELETE /flavors/{id} → 202, no body (admin); 404 when unknown."""
    authorize(req.context, policies.DELETE)
    flavor_obj.destroy(req.deps.db, req.context, flavor_id)
    return None, 202
