"""The API's metrics under real gunicorn workers add up across processes."""

import os
import time
import urllib.request
from concurrent import futures

from prometheus_client import parser

REQUESTS = 60


def _get(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status, resp.read().decode()


def test_every_request_is_counted_once_across_workers(make_deployment, tmp_path):
    # Two workers, each replaced after 15 requests: the requests are served by
    # several processes, some of them gone by the time of the scrape.
    deployment = make_deployment("""\
        [wsgi]
        max_requests = 15
        max_requests_jitter = 0
        [metrics]
        enabled = true
        """, start=("volumesvc-api",))
    headers = {"X-Auth-Token": "admin:admin", "Accept": "application/json"}
    with futures.ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda _: _get(f"{deployment.api}/v2.1/servers", headers)[0],
                                 range(REQUESTS)))
    assert statuses == [200] * REQUESTS
    status, text = _get(f"{deployment.api}/metrics")
    assert status == 200
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    counts = [s for s in families["volumesvc_api_request_duration_seconds"].samples
              if s.name.endswith("_count") and s.labels["route"] == "/v2.1/servers"]
    assert [(s.labels, s.value) for s in counts] == [(
        {"route": "/v2.1/servers", "method": "GET", "status": "200", "microversion": "2.1"},
        REQUESTS)], deployment.logs()
    writers = {name.rsplit("_", 1)[1] for name in os.listdir(tmp_path / "api-metrics")
               if name.startswith("histogram_")}
    assert len(writers) >= 2, writers
    replaced = families["volumesvc_api_worker_replacements"].samples
    assert [s.value for s in replaced if s.name.endswith("_total")][0] >= 1
    # In flight: nothing left once every request was answered. A worker
    # lowers the gauge after it wrote the answer, so on a loaded machine the
    # client can read the last answer first: scraped again for a while.
    deadline = time.monotonic() + 15
    while True:
        in_flight = families["volumesvc_api_requests_in_flight"].samples
        if sum(s.value for s in in_flight) <= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
        families = {f.name: f for f in parser.text_string_to_metric_families(
            _get(f"{deployment.api}/metrics")[1])}
    assert {s.labels["pool"] for s in in_flight} >= {"read"}
    assert sum(s.value for s in in_flight) <= 1  # at most the scrape itself
