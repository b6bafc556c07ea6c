"""The cluster storm's accounting of Cinder's share (benchmarks/cluster_storm.py).

Cinder's share is read from cinder-api's own request log (``time:`` per
request) and the CPU of its process groups; these check the parsing, that
the benchmark's own volume lists stay out of volumesvc's Cinder time, and
that the volume list pages past Cinder's 1000 per page (a storm of 1000
volumes plus leftovers must not miss one).
"""

from benchmarks import cluster_storm

LOG = """\
2026-12-03 17:04:36.241 4700 INFO eventlet.wsgi.server [req-1] 10.251.3.11 "POST /v3/attachments HTTP/1.1" status: 200  len: 1093 time: 0.2500000
2026-12-03 17:04:36.300 4700 INFO eventlet.wsgi.server [req-2] 10.251.3.1 "PUT /v3/attachments/0b0e8f1c-3d7a-4c47-9b2c-6a1f0c7d2e11 HTTP/1.1" status: 200  len: 900 time: 0.5000000
2026-12-03 17:04:36.400 4700 INFO eventlet.wsgi.server [req-3] 10.251.3.1 "GET /v3/volumes/detail?limit=1000 HTTP/1.1" status: 200  len: 9 time: 2.0000000
2026-12-03 17:04:36.500 4700 DEBUG something else
"""  # noqa: E501 - cinder-api's lines as it writes them


def test_cinder_request_seconds_per_route(tmp_path):
    path = tmp_path / "cinder-api.log"
    path.write_text("ignored line before the storm\n" + LOG)
    timed = cluster_storm.cinder_request_seconds(str(path), len("ignored line before the storm\n"))
    assert timed == {"POST /v3/attachments": [1, 0.25], "PUT /v3/attachments/{id}": [1, 0.5],
                     "GET /v3/volumes/detail": [1, 2.0]}


def test_cinder_share_leaves_out_the_benchmarks_own_requests():
    timed = {"POST /v3/attachments": [1, 0.25], "GET /v3/volumes/detail": [1, 2.0]}
    run = {"cpu": {"api-1": 3.0, "cinder-api": 1.0, "machine": 50.0, "shared daemons": 9.0,
                   "load generator": 7.0},
           "spans": [(0.0, 0.1), (1.0, 1.1)], "done_at": [2.0, 3.0]}
    share = cluster_storm.cinder_share(run, {"cinder-api"}, timed)
    assert share == {"cpu": 1.0, "cpu_total": 4.0, "request_seconds": 0.25,
                     "attach_seconds": 4.0}


def test_volume_list_pages_past_a_thousand():
    pages = {None: [{"id": f"v{i:04d}", "status": "in-use"} for i in range(1000)],
             "v0999": [{"id": "v1000", "status": "available"}]}
    asked = []

    class Paged(cluster_storm.PagedClient):
        def cinder(self, method, path, body=None, timeout=None):
            marker = path.partition("&marker=")[2] or None
            asked.append(marker)
            return 200, {"volumes": pages[marker]}

    statuses = Paged("http://api", "http://cinder", 5).volume_statuses()
    assert len(statuses) == 1001 and statuses["v1000"] == "available"
    assert asked == [None, "v0999"]


def test_volume_list_that_times_out_is_asked_again():
    """Regression: the first N=1000 run ended on one list's timeout under the storm."""
    answers = [TimeoutError("timed out"), (200, {"volumes": [{"id": "v", "status": "in-use"}]})]

    class Slow(cluster_storm.PagedClient):
        def cinder(self, method, path, body=None, timeout=None):
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

    assert Slow("http://api", "http://cinder", 5).volume_statuses() == {"v": "in-use"}
    assert answers == []
