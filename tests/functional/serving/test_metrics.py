"""The API's Prometheus metrics: families, labels, and the text format Prometheus parses."""

import pathlib
import re

import pytest
from prometheus_client import parser

from tests.functional.stack import Stack
from volumesvc.serving import metrics

REPO = pathlib.Path(__file__).resolve().parents[3]
ADMIN = {"X-Auth-Token": "admin:admin"}


@pytest.fixture
def measured(tmp_path):
    s = Stack(tmp_path, conf_overrides={("metrics", "enabled"): True})
    yield s
    s.stop()


def _families(client, path="/metrics"):
    resp = client.get(path)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("text/plain; version=")
    return {f.name: f for f in parser.text_string_to_metric_families(resp.get_data(as_text=True))}


def _count(families, **labels):
    return sum(s.value for s in families["volumesvc_api_request_duration_seconds"].samples
               if s.name.endswith("_count")
               and all(s.labels.get(k) == v for k, v in labels.items()))


def test_request_histogram_labels_are_the_route_template(measured):
    created = measured.client.post("/v2.1/servers", headers=dict(ADMIN, **{
        "OpenStack-API-Version": "compute 2.101"}), json={"server": {
            "name": "s", "flavorRef": "1", "networks": "none", "block_device_mapping_v2": [
                {"source_type": "blank", "destination_type": "volume", "boot_index": 0,
                 "volume_size": 1, "delete_on_termination": True}]}})
    assert created.status_code == 202, created.get_json()
    server_id = created.get_json()["server"]["id"]
    for _ in range(3):
        measured.client.get(f"/v2.1/servers/{server_id}", headers=ADMIN)
    measured.client.get("/v2.1/servers/nope", headers=dict(ADMIN, **{
        "OpenStack-API-Version": "compute 2.90"}))
    measured.client.get("/no/such/path")
    families = _families(measured.client)
    assert _count(families, route="/v2.1/servers", method="POST", status="202",
                  microversion="2.101") == 1
    assert _count(families, route="/v2.1/servers/{server_id}", method="GET", status="200",
                  microversion="2.1") == 3
    assert _count(families, route="/v2.1/servers/{server_id}", status="404",
                  microversion="2.90") == 1
    assert _count(families, route="unmatched", microversion="-") == 1
    # The raw path (an id) is never a label value; the scrape itself is not counted.
    samples = families["volumesvc_api_request_duration_seconds"].samples
    assert not [s for s in samples if server_id in s.labels.get("route", "")]
    assert not [s for s in samples if s.labels.get("route") == "/metrics"]
    assert {s.labels.get("le") for s in samples if s.name.endswith("_bucket")} >= {"0.1", "+Inf"}


def test_every_family_is_exposed_and_documented(measured):
    measured.client.get("/v2.1/servers", headers=ADMIN)
    families = _families(measured.client)
    assert families["volumesvc_api_request_duration_seconds"].type == "histogram"
    assert families["volumesvc_api_requests_in_flight"].type == "gauge"
    assert families["volumesvc_api_worker_replacements"].type == "counter"
    # The names an operator alerts on, exactly as a scrape shows them (the
    # parser drops a counter's _total from its family name; _created, a
    # family of its own in this format, exists only outside multiprocess mode).
    exposed = {f.name + ("_total" if f.type == "counter" else "")
               for f in families.values()
               if f.name.startswith("volumesvc_") and not f.name.endswith("_created")}
    assert set(metrics.FAMILIES) == exposed
    doc = (REPO / "doc/source/admin/monitoring.rst").read_text()
    documented = set(re.findall(r"``(volumesvc_api_\w+)``", doc))
    assert exposed <= documented, exposed - documented
    assert documented <= exposed | {f"{metrics.REQUEST_DURATION}_{s}"
                                    for s in ("bucket", "count", "sum")}, documented


def test_metrics_path_is_configurable_and_off_by_default(tmp_path, stack):
    assert stack.client.get("/metrics").status_code == 300  # not served: a version choice
    s = Stack(tmp_path, conf_overrides={("metrics", "enabled"): True,
                                        ("metrics", "path"): "/prom"})
    try:
        assert "volumesvc_api_requests_in_flight" in _families(s.client, "/prom")
        assert s.client.post("/prom").status_code == 405
    finally:
        s.stop()


@pytest.mark.parametrize("path", ["metrics", "/v2.1/metrics", "/healthcheck"])
def test_a_metrics_path_that_would_hide_the_api_is_refused(tmp_path, path):
    from volumesvc.conf import get_conf
    from volumesvc.serving.app import create_app

    conf = get_conf(default_config_files=[])
    conf.set_override("enabled", True, group="metrics")
    conf.set_override("path", path, group="metrics")
    with pytest.raises(ValueError, match=r"\[metrics\] path"):
        create_app(conf)


def test_by_default_a_tokenless_scraper_reads_the_metrics(measured):
    assert measured.client.get("/metrics").status_code == 200


def test_a_policy_rule_asks_the_scraper_for_a_token_with_its_role(measured):
    measured.set_policy({"volumesvc:metrics:show": "role:admin"})
    assert measured.client.get("/metrics").status_code == 401
    assert measured.client.get("/metrics", headers={"X-Auth-Token": "u:p"}).status_code == 403
    resp = measured.client.get("/metrics", headers=ADMIN)
    assert resp.status_code == 200 and b"volumesvc_api_request_duration_seconds" in resp.data
