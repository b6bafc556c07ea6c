"""attach_storm --metrics: what a storm's scrape counts, from real metric endpoints."""

import types

import prometheus_client as prom

from benchmarks import attach_storm
from volumesvc.compute import metrics as compute_metrics


def test_the_storm_counts_the_apis_accepted_attaches_and_the_computes_successes():
    compute = compute_metrics.ComputeMetrics()
    api_registry = prom.CollectorRegistry()
    requests = prom.Histogram("volumesvc_api_request_duration_seconds", "API requests",
                              ["route", "method", "status", "microversion"],
                              registry=api_registry)
    compute.serve("127.0.0.1", 0)
    api_server, _ = prom.start_http_server(0, addr="127.0.0.1", registry=api_registry)
    stack = types.SimpleNamespace(metrics_urls={
        "api": f"http://127.0.0.1:{api_server.server_port}/metrics",
        "compute": f"http://127.0.0.1:{compute.port}/metrics"})
    try:
        route = dict(route=attach_storm.ATTACH_ROUTE, method="POST")
        requests.labels(status="200", microversion="2.100", **route).observe(1.0)
        before = attach_storm.scrape_counts(stack, "2.101")
        for _ in range(3):
            requests.labels(status="202", microversion="2.101", **route).observe(0.1)
            compute.operation_duration.labels(operation="attach_volume",
                                              result="success").observe(0.5)
        requests.labels(status="409", microversion="2.101", **route).observe(0.1)
        compute.operation_duration.labels(operation="attach_volume",
                                          result="error").observe(0.5)
        after = attach_storm.scrape_counts(stack, "2.101")
    finally:
        compute.stop()
        api_server.shutdown()
        api_server.server_close()
    assert attach_storm._delta(before, after) == {"api_attach_accepted": 3,
                                                  "compute_attach_success": 3}
    run = {"version": "2.101", "n": 3, "scraped": attach_storm._delta(before, after)}
    assert attach_storm.scraped_lines([run]).strip().endswith(
        "- 2.101, N=3: the API's histogram counts 3 attach POSTs answered 202, the compute "
        "3 successful attaches")
    assert attach_storm.scrape_counts(types.SimpleNamespace(metrics_urls={}), "2.101") == {}
