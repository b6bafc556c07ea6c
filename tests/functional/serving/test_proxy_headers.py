"""Proxy headers shape links only when the deployment says a proxy sets them.

The test client's requests come from 127.0.0.1 unless ``peer`` says otherwise.
"""

import pytest

from tests.functional.stack import BLANK_ROOT, Stack

FORGED = {"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example.org",
          "X-Forwarded-Prefix": "/x", "Forwarded": "proto=javascript;host=evil.example.org"}


def _links(stack, headers, peer="127.0.0.1"):
    """Self links of a version document and of a new server, ``headers`` sent from ``peer``."""
    base = {"X-Auth-Token": "admin:admin", "Accept": "application/json"}
    environ = {"REMOTE_ADDR": peer}
    version = stack.client.get("/v2.1/", headers=dict(base, **headers),
                               environ_base=environ).get_json()
    created = stack.client.post(
        "/v2.1/servers", headers=dict(base, **headers), environ_base=environ,
        json={"server": {"name": "s", "flavorRef": "1", "block_device_mapping_v2": BLANK_ROOT}})
    assert created.status_code == 202, created.get_json()
    server_id = created.get_json()["server"]["id"]
    shown = stack.client.get(f"/v2.1/servers/{server_id}", headers=dict(base, **headers),
                             environ_base=environ)
    return ([version["version"]["links"][0]["href"]]
            + [link["href"] for link in created.get_json()["server"]["links"]]
            + [link["href"] for link in shown.get_json()["server"]["links"]]
            + [created.headers["Location"]])


PROXY = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "compute.example.org",
         "X-Forwarded-Prefix": "/compute"}


def _parsing_on(tmp_path, trusted):
    s = Stack(tmp_path, conf_overrides={
        ("oslo_middleware", "enable_proxy_headers_parsing"): True,
        ("api", "trusted_proxies"): trusted})
    yield s
    s.stop()


@pytest.fixture
def proxied(tmp_path):
    yield from _parsing_on(tmp_path, ["127.0.0.1", "192.0.2.0/24"])


@pytest.fixture
def nobody_trusted(tmp_path):
    yield from _parsing_on(tmp_path, [])


def _assert_ignored(hrefs):
    for href in hrefs:
        assert href.startswith("http://localhost/"), href
        assert "evil" not in href and "/x/" not in href


def test_client_sent_proxy_headers_are_ignored_by_default(stack):
    _assert_ignored(_links(stack, FORGED))


def test_proxy_headers_are_honoured_when_enabled(proxied):
    for href in _links(proxied, PROXY):
        assert href.startswith("https://compute.example.org/compute/"), href


def test_proxy_headers_from_a_peer_that_is_not_a_trusted_proxy_are_ignored(proxied):
    _assert_ignored(_links(proxied, PROXY, peer="198.51.100.7"))
    _assert_ignored(_links(proxied, FORGED, peer="198.51.100.7"))
    for href in _links(proxied, PROXY, peer="192.0.2.55"):
        assert href.startswith("https://compute.example.org/compute/"), href


def test_parsing_on_without_trusted_proxies_believes_nobody(nobody_trusted):
    _assert_ignored(_links(nobody_trusted, FORGED))
