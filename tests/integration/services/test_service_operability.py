"""Conductor and compute as operators run them (issue 23), as separate processes.

Real RabbitMQ and PostgreSQL (and real Cinder for the attaches): the
compute tells systemd it is ready and pings the watchdog only while its
heartbeats reach a conductor; each process serves its own metrics; one
attach's request ids are found in the API's, the conductor's and the
compute's logs, and its osprofiler trace (sent over RabbitMQ, the
``messaging://`` driver) spans all three and the Cinder calls.
"""

import json
import shutil
import socket
import tempfile
import time
import urllib.request
import uuid

import pytest
from prometheus_client import parser

import volumesvc_aio as harness
from tests.integration.conftest import free_port
from tests.integration.services.helpers import boot

ATTACHES = 5
PROFILER_KEY = "it-profiler-key"
ATTACH_ROUTE = "/v2.1/servers/{server_id}/os-volume_attachments"


@pytest.fixture
def notify_socket():
    """A datagram socket standing in for systemd's ``$NOTIFY_SOCKET``: (socket, path)."""
    # NOTE: short directory: unix socket paths are limited to 108 bytes.
    workdir = tempfile.mkdtemp(prefix="vs-notify-", dir="/tmp")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(f"{workdir}/notify")
    yield sock, f"{workdir}/notify"
    sock.close()
    shutil.rmtree(workdir, ignore_errors=True)


def _receive(sock, until, timeout, what):
    """Messages received until ``until(messages)`` is true (fails after ``timeout``)."""
    messages = []
    deadline = time.monotonic() + timeout
    while not until(messages):
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"timed out waiting for {what}; received {messages}")
        sock.settimeout(left)
        try:
            messages.append(sock.recv(4096).decode())
        except TimeoutError:
            continue
    return messages


def _scrape(url):
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def _count(family, **labels):
    return sum(s.value for s in family.samples if s.name.endswith("_count")
               and all(s.labels.get(k) == v for k, v in labels.items()))


def test_compute_pings_the_watchdog_only_while_its_heartbeats_reach_a_conductor(
        make_deployment, notify_socket):
    conductor_port, compute_port = free_port(), free_port()
    dep = make_deployment(f"""
        [metrics]
        enabled = true
        conductor_listen_port = {conductor_port}
        compute_listen_port = {compute_port}
        """, start=("volumesvc-conductor",))
    sock, path = notify_socket
    harness.wait_for(lambda: dep.services().get("volumesvc-conductor", {}).get("state") == "up",
                     60, what="conductor up", children=list(dep.children.values()))
    # What systemd sets for a unit with WatchdogSec=2 (a ping each second).
    plain_env = dep.env
    dep.env = {**plain_env, "NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000"}
    dep.spawn("volumesvc-compute")
    # Only the compute talks to this socket: a conductor spawned with it would
    # be read as the compute (its own READY and pings).
    dep.env = plain_env
    children = list(dep.children.values())
    received = _receive(sock, lambda m: sum("WATCHDOG=1" in x for x in m) >= 2, 90,
                        "READY and two watchdog pings")
    # READY once consuming; healthy (pinging) once a heartbeat reached the conductor.
    assert received[0].startswith("READY=1\nSTATUS="), received
    assert any("STATUS=serving topic compute on it-compute-1" in x for x in received), received
    conductor_url = f"http://127.0.0.1:{conductor_port}"
    compute_url = f"http://127.0.0.1:{compute_port}"
    # The compute's heartbeats are calls the conductor answered.
    harness.wait_for(lambda: _count(_scrape(conductor_url)[
        "volumesvc_rpc_server_duration_seconds"], method="service_update", kind="call",
        outcome="success") >= 2, 30, what="heartbeats counted", children=children)
    assert "volumesvc_compute_operation_duration_seconds" in _scrape(compute_url)

    dep.stop("volumesvc-conductor", sig=9)
    received = _receive(sock, lambda m: any("STATUS=heartbeat failing" in x for x in m), 60,
                        "the compute to report its heartbeat failing")
    sock.settimeout(None)
    time.sleep(3)  # three pings' worth: none may come
    sock.setblocking(False)
    late = []
    try:
        while True:
            late.append(sock.recv(4096).decode())
    except BlockingIOError:
        pass
    sock.setblocking(True)
    assert not any("WATCHDOG=1" in x for x in late), late

    dep.spawn("volumesvc-conductor")
    received = _receive(sock, lambda m: any("WATCHDOG=1" in x for x in m), 90,
                        "watchdog pings once a conductor answers again")
    assert any("STATUS=serving topic compute" in x for x in received), received


@pytest.fixture
def attach_deployment(make_deployment, cinder_harness):
    ports = free_port(), free_port()
    # debug: the lock and RPC lines of each operation, with the request's ids.
    dep = make_deployment(f"""
        [DEFAULT]
        debug = true
        [cinder]
        auth_strategy = noauth
        endpoint_override = {cinder_harness.url}
        [metrics]
        enabled = true
        conductor_listen_port = {ports[0]}
        compute_listen_port = {ports[1]}
        [profiler]
        enabled = true
        hmac_keys = {PROFILER_KEY}
        connection_string = messaging://
        """)
    dep.metrics_urls = tuple(f"http://127.0.0.1:{p}" for p in ports)
    return dep


def _attach(dep, server_id, volume_id, global_request_id, extra_headers=None):
    """POST the attach at 2.101; the request id the API answered with."""
    req = urllib.request.Request(
        f"{dep.api}/v2.1/servers/{server_id}/os-volume_attachments", method="POST",
        data=json.dumps({"volumeAttachment": {"volumeId": volume_id}}).encode(),
        headers={"X-Auth-Token": "admin:admin", "OpenStack-API-Version": "compute 2.101",
                 "Content-Type": "application/json", "Accept": "application/json",
                 "X-OpenStack-Request-ID": global_request_id, **(extra_headers or {})})
    with urllib.request.urlopen(req, timeout=120) as resp:
        assert resp.status == 202
        return resp.headers["x-openstack-request-id"]


def _lines(dep, binary, needle):
    with open(dep.tmp_path / f"{binary}.log") as f:
        return [line for line in f if needle in line]


def test_attaches_counted_by_all_three_and_one_followed_across_their_logs(
        attach_deployment, cinder_api):
    from volumesvc.context import RequestContext

    dep = attach_deployment
    conductor_url, compute_url = dep.metrics_urls
    harness.wait_for(lambda: dep.compute_state() == "up", 60, what="compute up")
    server_id = boot(dep)
    ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True, roles=["admin"])
    volumes = [cinder_api.create(ctx, 1, f"ops-{n}", "")["id"] for n in range(ATTACHES)]
    for volume_id in volumes:
        harness.wait_for(lambda v=volume_id: cinder_api.get(ctx, v)["status"] == "available",
                         60, what="volume available")
    global_ids = [f"req-{uuid.uuid4()}" for _ in volumes]
    trace_id, headers = _trace_headers()
    request_ids = [_attach(dep, server_id, volumes[0], global_ids[0], headers)]
    request_ids += [_attach(dep, server_id, v, g) for v, g in zip(volumes[1:], global_ids[1:],
                                                                  strict=True)]
    for volume_id in volumes:
        harness.wait_for(lambda v=volume_id: cinder_api.get(ctx, v)["status"] == "in-use",
                         120, what="volume in-use", interval=0.5)
    harness.wait_for(lambda: _count(_scrape(compute_url)[
        "volumesvc_compute_operation_duration_seconds"], operation="attach_volume")
        == ATTACHES, 60, what="every attach counted by the compute")

    api = _scrape(dep.api)["volumesvc_api_request_duration_seconds"]
    assert _count(api, route=ATTACH_ROUTE, method="POST", status="202",
                  microversion="2.101") == ATTACHES
    compute = _scrape(compute_url)
    assert _count(compute["volumesvc_compute_operation_duration_seconds"],
                  operation="attach_volume", result="success") == ATTACHES
    assert _count(compute["volumesvc_compute_cinder_call_duration_seconds"],
                  call="attachment_complete", result="success") == ATTACHES + 1  # + root
    conductor = _scrape(conductor_url)["volumesvc_rpc_server_duration_seconds"]
    assert _count(conductor, method="attach_volume", kind="cast",
                  outcome="success") == ATTACHES

    request_id, global_id = request_ids[0], global_ids[0]
    api_lines = _lines(dep, "volumesvc-api", f"request_id: {request_id}")
    assert len(api_lines) == 1 and "status: 202" in api_lines[0], api_lines
    assert "microversion: 2.101" in api_lines[0]
    for binary in ("volumesvc-conductor", "volumesvc-compute"):
        lines = _lines(dep, binary, request_id)
        assert lines, f"{binary} logged nothing with {request_id}\n{dep.logs()}"
        assert all(global_id in line for line in lines), (binary, lines[:3])
        # The attach itself, not only the RPC plumbing: its instance lock.
        assert any(f"instance-{server_id}" in line for line in lines) or binary != \
            "volumesvc-compute", lines[:5]

    spans = _spans(dep, trace_id)
    names = {(service, name) for service, name, _ in spans}
    assert {("volumesvc-api", "wsgi"), ("volumesvc-conductor", "rpc"),
            ("volumesvc-compute", "rpc"), ("volumesvc-compute", "cinder"),
            ("volumesvc-compute", "libvirt")} <= names, names
    calls = {(service, name, call) for service, name, call in spans}
    assert ("volumesvc-conductor", "rpc", "attach_volume") in calls
    assert ("volumesvc-compute", "rpc", "attach_volume") in calls
    assert ("volumesvc-compute", "cinder", "attachment_complete") in calls
    assert ("volumesvc-compute", "libvirt", "attach_volume") in calls


def _trace_headers():
    """Start a trace here, as ``openstack --os-profile KEY`` does: (its id, headers)."""
    from osprofiler import profiler, web

    profiler.init(PROFILER_KEY)
    try:
        return profiler.get().get_base_id(), web.get_trace_id_headers()
    finally:
        profiler.clean()


def _spans(dep, trace_id):
    """(service, span name, RPC method or call) of every span of the trace, read back."""
    from osprofiler.drivers import base

    from volumesvc.conf import get_conf

    conf = get_conf(args=["--config-file", dep.conf], default_config_files=[])
    report = base.get_driver("messaging://", conf=conf, idle_timeout=5).get_report(trace_id)
    found = []

    def walk(node):
        for child in node.get("children", []):
            info = child["info"]
            meta = info.get("meta.raw_payload." + info["name"] + "-start", {})
            details = meta.get("info", {})
            found.append((info.get("service"), info["name"],
                          details.get("method") or details.get("call")))
            walk(child)
    walk(report)
    return found
