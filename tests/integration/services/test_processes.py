"""api, conductor and compute as separate processes over real RabbitMQ and PostgreSQL."""

import http.client
import json
import subprocess
import time
import urllib.request

import pytest

import volumesvc_aio as harness
from tests.integration.conftest import bin_path


@pytest.fixture
def deployment(make_deployment):
    made = make_deployment()
    return {"conf": made.conf, "api": made.api, "spawn": made.spawn,
            "children": made.children}


def _services(conf_path):
    out = subprocess.run(
        [bin_path("volumesvc-manage"), "--config-file", conf_path, "service", "list", "--json"],
        check=True, capture_output=True, text=True, timeout=60).stdout
    return {row["binary"]: row for row in json.loads(out)}


def _compute_state(conf_path):
    return _services(conf_path).get("volumesvc-compute", {}).get("state")


def _api_services(api):
    req = urllib.request.Request(
        f"{api}/v2.1/os-services",
        headers={"X-Auth-Token": "admin:admin", "OpenStack-API-Version": "compute 2.53"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return {s["binary"]: s for s in json.load(resp)["services"]}


def test_compute_goes_down_when_killed_and_up_after_restart(deployment):
    conf, children = deployment["conf"], list(deployment["children"].values())
    harness.wait_for(lambda: _compute_state(conf) == "up", timeout=60,
                       what="compute up", children=children)
    row = _services(conf)["volumesvc-compute"]
    assert row["host"] == "it-compute-1"
    assert row["version"] >= 1
    assert row["capabilities"]["supports_multiattach"] is True
    assert _services(conf)["volumesvc-conductor"]["state"] == "up"

    harness.wait_for(lambda: deployment["api"] and _api_services(deployment["api"]),
                       timeout=60, what="the API", children=children)
    api_row = _api_services(deployment["api"])["volumesvc-compute"]
    assert api_row["state"] == "up" and api_row["host"] == "it-compute-1"

    deployment["children"]["volumesvc-compute"].signal(9)
    deployment["children"]["volumesvc-compute"].proc.wait(10)
    harness.wait_for(lambda: _compute_state(conf) == "down", timeout=30,
                       what="compute down after kill")
    assert _api_services(deployment["api"])["volumesvc-compute"]["state"] == "down"

    deployment["spawn"]("volumesvc-compute")
    harness.wait_for(lambda: _compute_state(conf) == "up", timeout=60,
                       what="compute up after restart",
                       children=[deployment["children"]["volumesvc-compute"]])
    assert _api_services(deployment["api"])["volumesvc-compute"]["state"] == "up"


def test_sigterm_stops_services_gracefully(deployment):
    conf, children = deployment["conf"], list(deployment["children"].values())
    harness.wait_for(lambda: _compute_state(conf) == "up", timeout=60,
                       what="compute up", children=children)
    for name in ("volumesvc-compute", "volumesvc-conductor"):
        child = deployment["children"][name]
        child.proc.send_signal(15)
        assert child.proc.wait(30) == 0, child.tail()


def test_api_keeps_an_idle_connection_open_between_client_polls(make_deployment):
    """Regression: openstacksdk's 2 s status poll raced gunicorn's 2 s keepalive.

    The server closed the idle connection just as the client sent its next
    GET on it, and the client failed with "Remote end closed connection
    without response". A connection idle for longer than that must still
    answer (``[wsgi] keepalive``).
    """
    made = make_deployment(start=("volumesvc-api",))
    host, port = made.api.removeprefix("http://").split(":")
    harness.wait_for(lambda: urllib.request.urlopen(made.api, timeout=5).status == 200,
                     timeout=60, what="the API", children=list(made.children.values()))
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/v2.1", headers={"X-Auth-Token": "admin:admin"})
        first = conn.getresponse()
        first.read()
        assert first.status == 200
        assert first.getheader("Connection", "").lower() != "close"
        sock = conn.sock
        time.sleep(3.5)
        conn.request("GET", "/v2.1", headers={"X-Auth-Token": "admin:admin"})
        second = conn.getresponse()
        second.read()
        assert second.status == 200
        assert conn.sock is sock, "the client had to open a new connection"
    finally:
        conn.close()
