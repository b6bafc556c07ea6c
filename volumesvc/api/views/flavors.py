"""The flavor representation per microversion: one table for /flavors and /flavors/detail.

The ``brief`` view (GET /flavors) is id, name, links (+ 2.55 description);
the ``detail`` view (detail, show, create) adds the sizes, 2.61
``extra_specs`` when the extra-specs policy allows, and from 2.75 ``swap``
is always an integer (Nova showed a swap of 0 as ``""`` before).
"""

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation, attr
from volumesvc.api.request import base_url
from volumesvc.api.schemas.flavors import EXTRA_SPECS
from volumesvc.api.schemas.parameter_types import LINKS

BRIEF, DETAIL = "brief", "detail"
_DETAIL = (DETAIL,)


def prefixes(req):
    """(versioned, bookmark) URL prefixes of the links."""
    base = base_url(req.conf)
    project = f"/{req.project_id}" if req.project_id else ""
    return f"{base}/v2.1{project}", f"{base}{project}"


def links(req, flavorid):
    versioned, bookmark = prefixes(req)
    return [{"rel": "self", "href": f"{versioned}/flavors/{flavorid}"},
            {"rel": "bookmark", "href": f"{bookmark}/flavors/{flavorid}"}]


_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}

FLAVOR = Representation("flavor", (
    Field("id", {"type": "string"}, attr("flavorid")),
    Field("name", {"type": "string"}, attr("name")),
    Field("ram", _INT, attr("memory_mb"), views=_DETAIL),
    Field("disk", _INT, attr("root_gb"), views=_DETAIL),
    # NOTE: Nova shows a swap of 0 as "" until 2.75.
    Field("swap", {"type": ["integer", "string"]}, lambda f, ctx: f.swap or "",
          last=mv.before(mv.V2_75_STRICT_QUERY), views=_DETAIL),
    Field("swap", _INT, attr("swap"), first=mv.V2_75_STRICT_QUERY, views=_DETAIL),
    Field("OS-FLV-EXT-DATA:ephemeral", _INT, attr("ephemeral_gb"), views=_DETAIL),
    Field("OS-FLV-DISABLED:disabled", _BOOL, lambda f, ctx: bool(f.disabled), views=_DETAIL),
    Field("vcpus", _INT, attr("vcpus"), views=_DETAIL),
    Field("os-flavor-access:is_public", _BOOL, lambda f, ctx: bool(f.is_public),
          views=_DETAIL),
    Field("rxtx_factor", {"type": ["number", "string"]}, lambda f, ctx: f.rxtx_factor or "",
          views=_DETAIL),
    Field("links", LINKS, lambda f, ctx: links(ctx.req, f.flavorid)),
    Field("description", {"type": ["string", "null"]}, attr("description"),
          first=mv.V2_55_FLAVOR_DESCRIPTION),
    # Only when the extra-specs policy allows (``show_extra_specs``).
    Field("extra_specs", EXTRA_SPECS, lambda f, ctx: dict(f.extra_specs or {}),
          first=mv.V2_61_FLAVOR_EXTRA_SPECS, views=_DETAIL,
          when=lambda f, ctx: ctx.show_extra_specs),
))


def brief(req, flavor) -> dict:
    return FLAVOR.render(req.version, flavor, view=BRIEF, req=req)


def detail(req, flavor, show_extra_specs) -> dict:
    return FLAVOR.render(req.version, flavor, view=DETAIL, req=req,
                         show_extra_specs=show_extra_specs)
