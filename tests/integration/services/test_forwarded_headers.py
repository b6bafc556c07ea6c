"""volumesvc-api under real gunicorn: forwarded headers count only from a trusted proxy.

gunicorn trusts ``X-Forwarded-Proto`` from loopback by default
(``forwarded_allow_ips``), below oslo.middleware: with proxy-header parsing
off, a local client could still turn every link into https. Requests are
sent from 127.0.0.1 and from 127.0.0.2 (both loopback on Linux) so that one
of them can be the trusted proxy.
"""

import http.client
import json
import urllib.request

import pytest

import volumesvc_aio as harness

FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "compute.example.org",
             "Accept": "application/json"}


def _self_link(api, source):
    """The self link of the v2.1 version document, asked from ``source`` with FORWARDED."""
    host, port = api.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30,
                                      source_address=(source, 0))
    try:
        conn.request("GET", "/v2.1/", headers=FORWARDED)
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 200, body
        return json.loads(body)["version"]["links"][0]["href"]
    finally:
        conn.close()


@pytest.fixture
def start_api(make_deployment):
    def start(extra_ini=""):
        made = make_deployment(extra_ini, start=("volumesvc-api",))
        harness.wait_for(lambda: urllib.request.urlopen(made.api, timeout=5).status == 200,
                         timeout=60, what="the API", children=list(made.children.values()))
        return made.api
    return start


def test_links_stay_http_with_parsing_off_even_from_loopback(start_api):
    api = start_api()
    for source in ("127.0.0.1", "127.0.0.2"):
        link = _self_link(api, source)
        assert link.startswith(f"{api}/v2.1"), (source, link)


def test_with_parsing_on_only_the_trusted_proxy_shapes_links(start_api):
    api = start_api("trusted_proxies = 127.0.0.2\n"
                    "[oslo_middleware]\nenable_proxy_headers_parsing = true\n")
    assert _self_link(api, "127.0.0.2") == "https://compute.example.org/v2.1/"
    link = _self_link(api, "127.0.0.1")
    assert link.startswith(f"{api}/v2.1"), link
