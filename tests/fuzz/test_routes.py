"""Every route and method of api/routes.py, attacked with generated requests.

For each (route, method) hypothesis draws requests from the route's own
declared schemas (``func._schemas``) at a drawn microversion and breaks them
in the ways of tests/fuzz/strategies.py. Every answer must be below 500,
strictly valid JSON, a Nova fault (``{"<name>": {"code", "message"}}``) on
every 4xx, and never a success for Bob acting on Alice's server or volume.
The last test checks the services still answer after the run. Seed and size:
see conftest.py; the summary line gives the case count and the time taken.
"""

import math
import uuid

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.functional.stack import BLANK_ROOT
from tests.fuzz import conftest as fuzz_conf
from tests.fuzz import strategies as fst
from tests.fuzz import world as world_mod
from tests.fuzz.checks import check
from volumesvc import binaries
from volumesvc.api import routes

ROUTE_METHODS = [(rule, method) for rule, methods in routes.ROUTES.items()
                 for method in methods]



def _examples():
    # One share per route and method, plus one for made-up paths.
    return max(1, math.ceil(fuzz_conf.fuzz_cases() / (len(ROUTE_METHODS) + 1)))


def _settings():
    return settings(max_examples=_examples(), database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


def _ids(world, method, token):
    """Known ids to draw from; destructive requests get Alice's ids only as Bob.

    An owner's DELETE would remove the world's anchors for every later case;
    Bob's must fail, which is what is worth asking.
    """
    ids = world.ids()
    if method != "DELETE":
        return ids
    if token != world_mod.BOB:
        return {"project_id": ids["project_id"]}
    alice = world.alice_ids()
    return {key: [v for v in values if v in alice] or values
            for key, values in ids.items()}


def send(world, data, rule, method, handler):
    version, headers = data.draw(fst.versions(), label="version")
    token = data.draw(fst.TOKENS, label="token")
    ids = _ids(world, method, token)
    scoped = routes.project_scoped(rule)
    if scoped and data.draw(st.booleans(), label="project-scoped"):
        rule = scoped
    url = data.draw(fst.paths(rule, ids), label="path")
    query = data.draw(fst.queries(fst.schema_for(handler, fst.KIND_QUERY, version), ids),
                      label="query")
    if query:
        url = f"{url}?{query}"
    body = None
    if method in ("POST", "PUT") or data.draw(st.integers(0, 9)) == 0:
        body = data.draw(fst.bodies(fst.schema_for(handler, fst.KIND_BODY, version), ids),
                         label="body")
    content_type = data.draw(fst.CONTENT_TYPES, label="content-type")
    headers = dict(headers, Accept="application/json")
    if token is not None:
        headers["X-Auth-Token"] = token
    if content_type is not None and body is not None:
        headers["Content-Type"] = content_type
    request = {"method": method, "url": url, "token": token, "body": body,
               "headers": headers}
    resp = world.stack.client.open(url, method=method, data=body, headers=headers)
    fuzz_conf.record(resp.status_code)
    check(world, request, resp)


@pytest.mark.parametrize("rule,method", ROUTE_METHODS,
                         ids=[f"{m} {r}" for r, m in ROUTE_METHODS])
def test_route(world, rule, method):
    handler = routes.ROUTES[rule][method]

    @_settings()
    @seed(fuzz_conf.fuzz_seed())
    @given(data=st.data())
    def run(data):
        send(world, data, rule, method, handler)

    run()


_SEGMENTS = st.one_of(fst.EDGE_STRINGS, st.text(max_size=12),
                      st.sampled_from(["servers", "flavors", "os-services", "action",
                                       "detail", "os-volume_attachments", "v2.1", ".."]))


def test_made_up_paths(world):
    """Paths no route has: 404/405 faults under /v2*, 300 choices elsewhere."""
    @_settings()
    @seed(fuzz_conf.fuzz_seed())
    @given(data=st.data())
    def run(data):
        prefix = data.draw(st.sampled_from(["/v2.1", "/v2", "", "/v2.1/" + uuid.uuid4().hex]))
        segments = data.draw(st.lists(_SEGMENTS, min_size=1, max_size=5))
        method = data.draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD",
                                            "OPTIONS"]))
        url = prefix + "/" + "/".join(fst.quote(fst.encodable(s), safe="") for s in segments)
        if url.startswith("//"):
            url = "/x" + url[1:]  # the test client would read "//host" as a netloc
        version, headers = data.draw(fst.versions())
        headers = dict(headers, **{"X-Auth-Token": world_mod.ADMIN})
        request = {"method": method, "url": url, "token": world_mod.ADMIN, "body": None,
                   "headers": headers}
        resp = world.stack.client.open(url, method=method, headers=headers)
        fuzz_conf.record(resp.status_code)
        check(world, request, resp)

    run()


def test_the_services_still_answer(world):
    """After the run: the API answers, and a boot goes through conductor and compute."""
    stack = world.stack
    for path in ("/servers", "/servers/detail", "/flavors/detail", "/os-services"):
        stack.api("GET", path, status=200)
    services = stack.api("GET", "/os-services", version="2.53")[1]["services"]
    for service in [s for s in services if s["binary"] == binaries.COMPUTE]:
        # The run may have disabled or forced down the compute as an admin may.
        stack.api("PUT", f"/os-services/{service['id']}",
                  {"status": "enabled", "forced_down": False}, version="2.53", status=200)
    # ... and lowered Alice's quotas (PUT /os-quota-sets/<her project>): back to the defaults.
    stack.api("DELETE", f"/os-quota-sets/{world_mod.ALICE_PROJECT}", status=202)
    status, body, _ = stack.api("POST", "/servers", {"server": {
        "name": "after-fuzz", "flavorRef": "42", "block_device_mapping_v2": BLANK_ROOT}},
        token=world_mod.ALICE)
    assert status == 202, body
    stack.wait_for_server_status(body["server"]["id"], "ACTIVE")
