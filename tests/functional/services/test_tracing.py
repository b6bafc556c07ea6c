"""One attach traced across API, conductor, compute and Cinder calls on fake:// (issue 23).

osprofiler's notifier is replaced by a list here (the processes of a real
deployment send to ``[profiler] connection_string``; the integration test
tests/integration/services/test_service_operability.py reads a trace back
from RabbitMQ).
"""

import time

import pytest
from osprofiler import notifier, profiler, web

from tests.functional.stack import BLANK_ROOT, Stack

KEY = "fn-profiler-key"


@pytest.fixture
def traced_stack(tmp_path):
    stack = Stack(tmp_path, conf_overrides={
        ("profiler", "enabled"): True, ("profiler", "hmac_keys"): KEY,
        ("profiler", "connection_string"): "messaging://"})
    spans = []
    notifier.set(spans.append)
    yield stack, spans
    stack.stop()
    notifier.set(notifier._noop_notifier)
    web.disable()


def _started(spans, trace_id):
    return [(s["name"].removesuffix("-start"), s.get("info", {}))
            for s in spans if s["base_id"] == trace_id and s["name"].endswith("-start")]


def _settle(spans):
    """Wait until no span came for a second (the attach's last reports are done)."""
    seen = -1
    while seen != len(spans):
        seen = len(spans)
        time.sleep(1.0)


def test_one_attach_is_one_trace_across_the_services(traced_stack):
    stack, spans = traced_stack
    server = stack.boot(stack.context(), BLANK_ROOT)
    stack.wait_instance(server, "active")
    volume = stack.cinder.create(stack.context(), 1, "traced", "")
    profiler.init(KEY)
    trace_id = profiler.get().get_base_id()
    headers = web.get_trace_id_headers()
    profiler.clean()
    resp = stack.client.post(
        f"/v2.1/servers/{server}/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": volume["id"]}},
        headers={"X-Auth-Token": "admin:p1", "OpenStack-API-Version": "compute 2.101",
                 "Accept": "application/json", **headers})
    assert resp.status_code == 202, resp.data
    stack.wait(lambda: stack.cinder.get(stack.context(), volume["id"])["status"] == "in-use",
               what="in-use")
    stack.wait(lambda: ("cinder", "attachment_complete") in {
        (name, info.get("call")) for name, info in _started(spans, trace_id)},
        what="the Cinder calls traced")
    started = _started(spans, trace_id)
    names = [name for name, _ in started]
    assert names[0] == "wsgi"
    rpc = [(info["method"], info["kind"]) for name, info in started if name == "rpc"]
    assert ("attach_volume", "cast") in rpc  # the conductor's task, then the compute's
    assert rpc.count(("attach_volume", "cast")) == 2
    # No call to a compute: the only call is the compute's one report.
    assert {m for m, kind in rpc if kind == "call"} <= {"bdm_update"}
    calls = {(name, info.get("call")) for name, info in started}
    assert {("cinder", "attachment_update"), ("libvirt", "attach_volume")} <= calls
    # Once the attach is done, a request without trace headers is not traced:
    # no thread keeps the trace of the message it handled before.
    registry = stack.computes["fn-compute"].metrics.registry
    stack.wait(lambda: registry.get_sample_value(
        "volumesvc_compute_operation_duration_seconds_count",
        {"operation": "attach_volume", "result": "success"}) == 1,
        what="the compute's attach finished")
    _settle(spans)
    spans.clear()
    stack.api("GET", f"/servers/{server}", status=200)
    stack.conductor_api().instance_get(stack.context(), instance_uuid=server)
    assert spans == []
