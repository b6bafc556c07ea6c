"""Every filter of every list route with each hostile value, and the fuzzer's three 500s.

The generated requests of test_routes.py draw a filter value now and then;
this module gives every query parameter of every GET route that declares a
query schema each of ``strategies.HOSTILE_FILTER_VALUES`` (patterns that do
not compile, are too large or only backtrack, integers past 32 and 64 bits)
as an admin at the lowest version of each query schema and as a project
member at its highest. Every answer must pass ``checks.check``: below
500, a Nova fault on every 4xx. The regression tests pin the three 500s a
fuzzer found on ``/servers/detail`` and the pattern that held a worker.
"""

from urllib.parse import urlencode

import pytest

from tests.fuzz import conftest as fuzz_conf
from tests.fuzz import strategies as fst
from tests.fuzz import world as world_mod
from tests.fuzz.checks import check
from volumesvc.api import routes

LIST_ROUTES = fst.list_routes(routes.ROUTES)


def _get(world, url, version, token):
    headers = {"OpenStack-API-Version": f"compute {version}", "Accept": "application/json",
               "X-Auth-Token": token}
    resp = world.stack.client.open(url, method="GET", headers=headers)
    fuzz_conf.record(resp.status_code)
    check(world, {"method": "GET", "url": url, "token": token, "body": None,
                              "headers": headers}, resp)
    return resp


def _path(world, rule):
    """``rule`` with each placeholder filled with a known id (Alice's), or a made-up one."""
    ids = world.ids()
    return "/".join(fst.quote((ids.get(segment[1:-1]) or ["made-up"])[0], safe="")
                    if segment.startswith("<") else segment for segment in rule.split("/"))


@pytest.mark.parametrize("rule,handler,names", LIST_ROUTES,
                         ids=[rule for rule, _handler, _names in LIST_ROUTES])
def test_every_filter_refuses_hostile_values(world, rule, handler, names):
    path = _path(world, rule)
    for low, high in fst.query_windows(handler):
        for token, version in ((world_mod.ADMIN, low), (world_mod.ALICE, high)):
            for name in names:
                for value in fst.HOSTILE_FILTER_VALUES:
                    _get(world, f"{path}?{urlencode({name: value})}", version, token)


def test_the_list_routes_are_found():
    """The walk above covers the lists and their filters (a schema change cannot hide one)."""
    found = {rule: names for rule, _handler, names in LIST_ROUTES}
    assert {"name", "power_state", "key_name", "availability_zone"} <= set(
        found["/v2.1/servers/detail"])
    assert {"minDisk", "minRam"} <= set(found["/v2.1/flavors/detail"])
    assert "/v2.1/os-keypairs" in found and "/v2.1/servers" in found


@pytest.mark.parametrize("query,version", [
    ("name=" + "(" * 36, "2.96"),
    ("name=a%7B99999999999%7D", "2.96"),
    ("power_state=99999999999999999999999", "2.83"),
])
def test_the_fuzzers_500s_are_400_faults(world, query, version):
    resp = _get(world, f"/v2.1/servers/detail?{query}", version, world_mod.ALICE)
    assert resp.status_code == 400, resp.json
    assert resp.json["badRequest"]["code"] == 400


def _listed(world, query, token):
    resp = _get(world, f"/v2.1/servers?{query}", "2.96", token)
    assert resp.status_code == 200, resp.json
    return [server["id"] for server in resp.json["servers"]]


def test_a_backtracking_prone_name_pattern_is_run_by_a_linear_engine(world):
    """``^(a+)+$`` against BACKTRACKING_NAME: an answer, and the right one.

    A backtracking engine would need about 2**60 steps for Bob's server, so
    that this request answers at all shows that none ran it; the second
    pattern's other branch matches the name.
    """
    assert _listed(world, "name=%5E(a%2B)%2B%24", world_mod.BOB) == []
    assert _listed(world, "name=%5E(a%2B)%2B%24%7C!%24", world_mod.BOB) == [world.bob_server]
    # What only a backtracking engine runs is refused, for every caller.
    for token in (world_mod.BOB, world_mod.ADMIN):
        resp = _get(world, "/v2.1/servers?name=(a)%5C1", "2.96", token)
        assert resp.status_code == 400 and "regular expression" in \
            resp.json["badRequest"]["message"], resp.json
