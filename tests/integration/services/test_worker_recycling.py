"""volumesvc-api replaces its workers after ``[wsgi] max_requests`` without dropping a request.

A worker that reaches its count stops taking connections, finishes what it
holds and answers a request that arrives on one of its kept-alive
connections with ``Connection: close``; the master forks a fresh one. Clients
that keep connections alive (as openstacksdk does) must see every request
answered while that happens many times over.
"""

import concurrent.futures
import http.client
import os
import urllib.request

import volumesvc_aio as harness

CLIENTS = 8
REQUESTS_PER_CLIENT = 40
MAX_REQUESTS = 7


def _worker_pids(master):
    with open(f"/proc/{master}/task/{master}/children") as f:
        return {int(pid) for pid in f.read().split()}


def _client(port):
    """REQUESTS_PER_CLIENT GETs on one kept-alive connection; the statuses."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    statuses = []
    try:
        for _ in range(REQUESTS_PER_CLIENT):
            # A server-side close after a response reopens the connection
            # (http.client's auto_open); anything else raises and fails.
            conn.request("GET", "/v2.1/servers", headers={"X-Auth-Token": "admin:admin"})
            resp = conn.getresponse()
            resp.read()
            statuses.append(resp.status)
    finally:
        conn.close()
    return statuses


def test_recycled_workers_answer_every_request(make_deployment):
    made = make_deployment(f"threads = 4\nmax_requests = {MAX_REQUESTS}\n"
                           "max_requests_jitter = 2\n", start=("volumesvc-api",))
    api = made.children["volumesvc-api"]
    harness.wait_for(lambda: urllib.request.urlopen(made.api, timeout=5).status == 200,
                     timeout=60, what="the API", children=[api])
    harness.wait_for(lambda: len(_worker_pids(api.pid)) == 2, timeout=30, what="2 workers")
    first = _worker_pids(api.pid)

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(_client, [int(made.api.rsplit(":", 1)[1])] * CLIENTS))

    statuses = [status for got in results for status in got]
    assert statuses == [200] * CLIENTS * REQUESTS_PER_CLIENT
    # Every original worker was replaced (320 requests over 2 workers of 7-9)
    # and the master keeps two.
    harness.wait_for(lambda: len(_worker_pids(api.pid)) == 2, timeout=30, what="2 workers")
    assert not first & _worker_pids(api.pid)
    assert api.running()
    log = api.tail(2000)
    assert log.count("Autorestarting worker") >= 10, log
    assert os.path.exists(f"/proc/{api.pid}")
