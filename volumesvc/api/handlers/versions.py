"""Version discovery (doc/source/contributor/contract.rst §1.1): no auth, no microversion.

``GET /`` lists v2.0 and v2.1; ``GET /v2[/]`` and ``GET /v2.1[/]`` show one;
any other root path answers 300 with the choices (built by :func:`choices`,
called from the app's 404 handling). hrefs are absolute (tempest follows
each self link and compares); X-Forwarded-* shapes them only with
``[oslo_middleware] enable_proxy_headers_parsing`` on.
"""

from volumesvc.api import microversions as mv
from volumesvc.api import policy, validation
from volumesvc.api.request import base_url
from volumesvc.api.schemas import versions as schema

_VERSIONS = {
    "v2.0": {
        "id": "v2.0",
        "status": "DEPRECATED",
        "version": "",
        "min_version": "",
        "updated": "2025-07-04T12:00:00Z",
        "path": "/v2/",
        "media": "application/vnd.openstack.compute+json;version=2",
    },
    "v2.1": {
        "id": "v2.1",
        "status": "CURRENT",
        "version": str(mv.MAX_VERSION),
        "min_version": str(mv.MIN_VERSION),
        "updated": "2013-07-23T11:33:21Z",
        "path": "/v2.1/",
        "media": "application/vnd.openstack.compute+json;version=2.1",
    },
}


def _entry(conf, key, *, detailed, self_path=None):
    info = _VERSIONS[key]
    base = base_url(conf)
    doc: dict[str, object] = {
        k: info[k] for k in ("id", "status", "version", "min_version", "updated")}
    links = [{"rel": "self", "href": base + (self_path or info["path"])}]
    doc["links"] = links
    media = [{"base": "application/json", "type": info["media"]}]
    if detailed:
        links.append({"rel": "describedby", "type": "text/html",
                      "href": "http://docs.openstack.org/"})
        doc["media-types"] = media
    return doc, media


def _doc(req, key):
    return {"version": _entry(req.conf, key, detailed=True)[0]}, 200


@policy.public
@validation.query_schema(schema.show_versions_query_v2_1, strict_from=None)
@validation.response_body_schema(schema.list_versions_response_v2_1)
def list_versions(req):
    """GET / → 200 {"versions": [v2.0, v2.1]} sorted by id (tempest asserts it)."""
    return {"versions": [_entry(req.conf, key, detailed=False)[0]
                         for key in sorted(_VERSIONS)]}, 200


@policy.public
@validation.query_schema(schema.show_versions_query_v2_1, strict_from=None)
@validation.response_body_schema(schema.show_version_response_v2_1)
def show_version_v2(req):
    """GET /v2 and /v2/ → 200 {"version": <v2.0 doc>}."""
    return _doc(req, "v2.0")


@policy.public
@validation.query_schema(schema.show_versions_query_v2_1, strict_from=None)
@validation.response_body_schema(schema.show_version_response_v2_1)
def show_version_v2_1(req):
    """GET /v2.1 and /v2.1/ → 200 {"version": <v2.1 doc>}, any microversion."""
    return _doc(req, "v2.1")


def choices(conf, path: str) -> dict:
    """The 300 body for an unknown root path: each version's link to ``path``."""
    entries = []
    for key in sorted(_VERSIONS):
        prefix = _VERSIONS[key]["path"].rstrip("/")
        doc, media = _entry(conf, key, detailed=False, self_path=prefix + path)
        entries.append({"id": doc["id"], "status": doc["status"], "links": doc["links"],
                        "media-types": media})
    return {"choices": entries}
