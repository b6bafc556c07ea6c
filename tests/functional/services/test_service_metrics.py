"""The conductor's and the compute's metrics after real work on fake:// (issue 23).

Every family is read back from the exposition text with prometheus_client's
own parser, as Prometheus would scrape it.
"""

import urllib.request

from prometheus_client import parser

from volumesvc.common import metrics as common_metrics
from volumesvc.compute import metrics as compute_metrics
from volumesvc.objects import block_device as bdm_obj

HOST = "fn-compute"
ATTACHES = 3


def _families(service):
    text = service.metrics.exposition().decode()
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def _count(family, **labels):
    return sum(s.value for s in family.samples if s.name.endswith("_count")
               and all(s.labels.get(k) == v for k, v in labels.items()))


def _attach_storm(stack, server):
    ctx = stack.context()
    volumes = [stack.cinder.create(ctx, 1, f"m{n}", "")["id"] for n in range(ATTACHES)]
    for volume_id in volumes:
        stack.attach_volume(server, volume_id, version="2.101", status=202, token="admin:p1")
    for volume_id in volumes:
        stack.wait(lambda v=volume_id: stack.cinder.get(ctx, v)["status"] == "in-use",
                   what=f"{volume_id} in-use")
    return volumes


def test_attaches_are_counted_by_conductor_and_compute_with_their_labels(stack, server):
    volumes = _attach_storm(stack, server)
    # Cinder says in-use just before the compute records its event finished.
    stack.wait(lambda: _count(_families(stack.computes[HOST])[
        "volumesvc_compute_operation_duration_seconds"], operation="attach_volume") == ATTACHES,
        what="every attach counted")
    compute = _families(stack.computes[HOST])
    assert set(compute) >= {f.removesuffix("_total") for f in compute_metrics.ComputeMetrics()
                            .families()}
    operations = compute["volumesvc_compute_operation_duration_seconds"]
    assert _count(operations, operation="attach_volume", result="success") == ATTACHES
    assert _count(operations, operation="attach_volume", result="error") == 0
    assert _count(operations, operation="build_and_run_instance", result="success") == 1
    # The server's root volume was attached too, by the boot.
    cinder = compute["volumesvc_compute_cinder_call_duration_seconds"]
    assert _count(cinder, call="attachment_update", result="success") == ATTACHES + 1
    assert _count(cinder, call="attachment_complete", result="success") == ATTACHES + 1
    libvirt = compute["volumesvc_compute_libvirt_call_duration_seconds"]
    assert _count(libvirt, call="attach_volume", result="success") == ATTACHES
    rpc = compute["volumesvc_rpc_server_duration_seconds"]
    assert _count(rpc, method="attach_volume", kind="cast", outcome="success") == ATTACHES
    # The conductor named the devices: the compute answers no call of an attach.
    assert _count(rpc, kind="call") == 0

    conductor = _families(stack.conductor)
    rpc = conductor["volumesvc_rpc_server_duration_seconds"]
    assert set(rpc.samples[0].labels) == {"method", "kind", "outcome", "le"}
    assert _count(rpc, method="attach_volume", kind="cast", outcome="success") == ATTACHES
    # The compute's persistence calls, answered by the conductor: one report per attach.
    assert _count(rpc, method="bdm_create", kind="call") == 0

    # A BDM whose Cinder attachment an operator deleted: the reconciliation removes it.
    ctx = stack.admin_context()
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, ctx, volumes[0], server)
    stack.cinder.attachment_delete(ctx, bdm.attachment_id)
    reports = stack.conductor_api().reconcile_volume_attachments(ctx, instance_uuids=[server])
    assert [r["volume_id"] for r in reports[0]["removed_bdms"]] == [volumes[0]]
    compute = _families(stack.computes[HOST])
    removals = compute["volumesvc_compute_reconcile_removals"].samples
    assert [(s.labels, s.value) for s in removals if s.name.endswith("_total")] == [
        ({"kind": "bdm"}, 1)]
    operations = compute["volumesvc_compute_operation_duration_seconds"]
    assert _count(operations, operation="reconcile", result="success") == 1


def test_a_failed_call_is_an_error_outcome(stack, server):
    rpc_families = _families(stack.conductor)["volumesvc_rpc_server_duration_seconds"]
    before = _count(rpc_families, method="instance_get", outcome="error")
    try:
        stack.conductor_api().instance_get(stack.context(), instance_uuid="no-such-server")
    except Exception:  # noqa: BLE001 - InstanceNotFound, re-raised on this side
        pass
    else:
        raise AssertionError("instance_get of a missing server answered")
    rpc_families = _families(stack.conductor)["volumesvc_rpc_server_duration_seconds"]
    assert _count(rpc_families, method="instance_get", kind="call",
                  outcome="error") == before + 1


def test_the_scrape_endpoint_serves_the_process_registry():
    metrics = common_metrics.ServiceMetrics()
    metrics.observe_rpc("ping", "call", "success", 0.002)
    metrics.serve("127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics.port}/metrics",
                                    timeout=10) as resp:
            text = resp.read().decode()
    finally:
        metrics.stop()
    family = {f.name: f for f in parser.text_string_to_metric_families(text)}[
        common_metrics.RPC_DURATION]
    assert _count(family, method="ping", kind="call", outcome="success") == 1


def test_a_taken_port_leaves_the_service_without_metrics_not_down():
    first = common_metrics.ServiceMetrics()
    first.serve("127.0.0.1", 0)
    try:
        second = common_metrics.ServiceMetrics()
        second.serve("127.0.0.1", first.port)
        assert second.port is None
        second.stop()
    finally:
        first.stop()


def test_a_reboot_s_reconciliation_is_counted_like_an_operator_s(stack, server):
    """Every occasion enters the reconciler through one measured step, a reboot's too.

    Regression guard: the metrics once replaced ``Reconciler.run`` on the
    instance; now the runner's one entry point takes them, whatever called it.
    """
    ctx = stack.admin_context()
    volume_id = _attach_storm(stack, server)[0]
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, ctx, volume_id, server)
    stack.cinder.attachment_delete(ctx, bdm.attachment_id)  # behind our back
    stack.api("POST", f"/servers/{server}/action", {"reboot": {"type": "SOFT"}}, status=202)
    stack.wait_instance(server, "active")
    compute = _families(stack.computes[HOST])
    operations = compute["volumesvc_compute_operation_duration_seconds"]
    assert _count(operations, operation="reconcile", result="success") == 1
    removals = compute["volumesvc_compute_reconcile_removals"].samples
    assert [(s.labels, s.value) for s in removals if s.name.endswith("_total")] == [
        ({"kind": "bdm"}, 1)]
