"""Proxy headers shape links only when the deployment says a proxy sets them."""

import pytest

from tests.functional.stack import BLANK_ROOT, Stack

FORGED = {"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example.org",
          "X-Forwarded-Prefix": "/x", "Forwarded": "proto=javascript;host=evil.example.org"}


def _links(stack, headers):
    """Self links of a version document and of a new server, with ``headers`` sent."""
    base = {"X-Auth-Token": "admin:admin", "Accept": "application/json"}
    version = stack.client.get("/v2.1/", headers=dict(base, **headers)).get_json()
    created = stack.client.post(
        "/v2.1/servers", headers=dict(base, **headers),
        json={"server": {"name": "s", "flavorRef": "1", "block_device_mapping_v2": BLANK_ROOT}})
    assert created.status_code == 202, created.get_json()
    server_id = created.get_json()["server"]["id"]
    shown = stack.client.get(f"/v2.1/servers/{server_id}", headers=dict(base, **headers))
    return ([version["version"]["links"][0]["href"]]
            + [link["href"] for link in created.get_json()["server"]["links"]]
            + [link["href"] for link in shown.get_json()["server"]["links"]]
            + [created.headers["Location"]])


@pytest.fixture
def proxied(tmp_path):
    s = Stack(tmp_path, conf_overrides={
        ("oslo_middleware", "enable_proxy_headers_parsing"): True})
    yield s
    s.stop()


def test_client_sent_proxy_headers_are_ignored_by_default(stack):
    for href in _links(stack, FORGED):
        assert href.startswith("http://localhost/"), href
        assert "evil" not in href and "/x/" not in href


def test_proxy_headers_are_honoured_when_enabled(proxied):
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "compute.example.org",
               "X-Forwarded-Prefix": "/compute"}
    for href in _links(proxied, headers):
        assert href.startswith("https://compute.example.org/compute/"), href
