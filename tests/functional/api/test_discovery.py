"""Version discovery documents (doc/source/contributor/contract.rst §1.1): no auth, absolute
hrefs.
"""

import re

from tests.functional.api import fixtures
from tests.functional.api.journeys import at_version
from volumesvc.api import microversions as mv

world = fixtures.World  # the world of the client fixture (conftest.py)

MAX = str(mv.MAX_VERSION)
HEADERS = {"accept": "application/json"}


def test_root_lists_both_versions_sorted_by_id_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # root lists both versions sorted by id
    resp = client.get("/", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert "x-openstack-request-id" not in resp.headers
    assert "x-compute-request-id" not in resp.headers
    assert "openstack-api-version" not in resp.headers
    assert "x-openstack-nova-api-version" not in resp.headers
    assert len(resp.json["versions"]) == 2
    assert resp.json["versions"][0]["id"] == "v2.0"
    assert resp.json["versions"][0]["status"] == "DEPRECATED"
    assert resp.json["versions"][0]["version"] == ""
    assert resp.json["versions"][0]["min_version"] == ""
    assert resp.json["versions"][0]["updated"] == "2025-07-04T12:00:00Z"
    assert resp.json["versions"][1]["id"] == "v2.1"
    assert resp.json["versions"][1]["status"] == "CURRENT"
    assert resp.json["versions"][1]["version"] == MAX
    assert resp.json["versions"][1]["min_version"] == "2.1"
    assert len(resp.json["versions"][1]["links"]) == 1
    assert resp.json["versions"][1]["links"][0]["rel"] == "self"
    assert re.search(r"^https?:\/\/[^\/]+\/v2\.1\/$",
                     str(resp.json["versions"][1]["links"][0]["href"]))
    root = resp

    # root ignores microversion headers
    resp = client.get("/", headers=at_version(HEADERS, "2.200"))
    assert resp.status_code == 200, resp.text
    assert "openstack-api-version" not in resp.headers

    # v2.1 self link of root resolves to the same document
    prev = resp
    resp = client.get(prev.json["versions"][1]["links"][0]["href"], headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["version"]["id"] == "v2.1"
    assert resp.json["version"]["links"][0]["href"] == (
        root.json["versions"][1]["links"][0]["href"])
    assert resp.json["version"]["links"][1]["rel"] == "describedby"
    assert resp.json["version"]["links"][1]["type"] == "text/html"
    assert resp.json["version"]["links"][1]["href"] == "http://docs.openstack.org/"
    assert resp.json["version"]["media-types"][0]["base"] == "application/json"
    assert resp.json["version"]["media-types"][0]["type"] == (
        "application/vnd.openstack.compute+json;version=2.1")

    # v2.1 without slash
    resp = client.get("/v2.1", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert re.search("^req-[0-9a-f-]{36}$", resp.headers["x-openstack-request-id"])
    assert re.search("^req-[0-9a-f-]{36}$", resp.headers["x-compute-request-id"])
    assert resp.headers["openstack-api-version"] == "compute 2.1"
    assert resp.json["version"]["version"] == MAX

    # v2 with and without slash
    resp = client.get("/v2", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["version"]["id"] == "v2.0"
    assert resp.json["version"]["status"] == "DEPRECATED"
    assert resp.json["version"]["media-types"][0]["type"] == (
        "application/vnd.openstack.compute+json;version=2")

    # v2 with slash
    resp = client.get("/v2/", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["version"]["id"] == "v2.0"

    # unknown root path offers choices
    resp = client.get("/servers/detail", headers=HEADERS)
    assert resp.status_code == 300, resp.text
    assert "x-openstack-request-id" not in resp.headers
    assert len(resp.json["choices"]) == 2
    assert resp.json["choices"][0]["id"] == "v2.0"
    assert re.search(r"\/v2\/servers\/detail$", str(resp.json["choices"][0]["links"][0]["href"]))
    assert resp.json["choices"][1]["id"] == "v2.1"
    assert re.search(r"\/v2\.1\/servers\/detail$",
                     str(resp.json["choices"][1]["links"][0]["href"]))
    assert resp.json["choices"][1]["media-types"][0]["type"] == (
        "application/vnd.openstack.compute+json;version=2.1")

    # [oslo_middleware] enable_proxy_headers_parsing is off by default: any client
    # can send these (tests/functional/serving/test_proxy_headers.py has both ways).
    # forwarded headers from a client are ignored by default
    resp = client.get(
        "/",
        headers={**HEADERS, "x-forwarded-proto": "javascript",
                     "x-forwarded-host": "evil.example.org"})
    assert resp.status_code == 200, resp.text
    assert re.search(r"^http:\/\/(?!evil)[^\/]+\/v2\.1\/$",
                     str(resp.json["versions"][1]["links"][0]["href"]))

    # a forwarded prefix from a client is ignored by default
    resp = client.get(
        "/v2.1/",
        headers={**HEADERS, "x-forwarded-proto": "https", "x-forwarded-host": "api.example.org",
                     "x-forwarded-prefix": "/compute"})
    assert resp.status_code == 200, resp.text
    assert re.search(r"^http:\/\/(?!api\.example)[^\/]+\/v2\.1\/$",
                     str(resp.json["version"]["links"][0]["href"]))

