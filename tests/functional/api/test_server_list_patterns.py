"""Hostile values of the server list filters, through the app, on SQLite, PostgreSQL and MariaDB.

The name filter (and the other regular-expression filters) runs in the
database: every backend must answer a bad or pathological pattern with a
400 fault or a correct list, never a 500 nor a worker held for minutes.
"""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ADMIN, ALICE, FilterWorld, add_filter_server
from tests.functional.db.conftest import BACKEND_PARAMS, require_backend

# 60 a's then "!": about 2**60 steps for a backtracking engine against ^(a+)+$.
LONG_NAME = "a" * 60 + "!"


class PatternWorld(FilterWorld):
    """FilterWorld plus Alice's server named :data:`LONG_NAME`."""

    @classmethod
    def seed(cls, db, ctx):
        super().seed(db, ctx)
        add_filter_server(db, ctx, 20, display_name=LONG_NAME)


@pytest.fixture(params=BACKEND_PARAMS)
def api(request):
    require_backend(request.param)
    with fixtures.open_world(PatternWorld, backend=request.param) as (app, _deps):
        yield app.test_client(), request.param


def _get(client, query, version="2.96", headers=ALICE):
    return client.get(f"/v2.1/servers/detail?{query}",
                      headers={**headers, "OpenStack-API-Version": f"compute {version}"})


def _fault(resp):
    assert resp.status_code == 400, resp.json
    return resp.json["badRequest"]["message"]


def test_the_fuzzers_500s_are_400_faults(api):
    client, _ = api
    assert "regular expression" in _fault(_get(client, "name=" + "(" * 36))
    assert "repetition" in _fault(_get(client, "name=a%7B99999999999%7D"))
    assert "power_state" in _fault(_get(client, "power_state=99999999999999999999999",
                                        version="2.83"))
    assert "progress" in _fault(_get(client, "progress=-2147483649", headers=ADMIN))
    # In range, or no number at all: a list (of no server here).
    assert _get(client, "power_state=2147483647", version="2.83").json["servers"] == []
    assert _get(client, "power_state=x", version="2.83").json["servers"] == []


def test_patterns_only_a_backtracking_engine_runs_are_refused_everywhere(api):
    client, _ = api
    for pattern in ("(w)eb-\\1", "web(%3F=-1)", "(%3F<!x)web"):
        assert "regular expression" in _fault(_get(client, f"name={pattern}"))
    # Nested counts: a program larger than the bound.
    assert "regular expression" in _fault(_get(client, "key_name=((a%7B100%7D)%7B100%7D)",
                                               headers=ADMIN))


def test_a_backtracking_prone_name_pattern_answers(api):
    """^(a+)+$ against LONG_NAME: a correct answer, or (MariaDB's PCRE2 gave up) a 400."""
    client, backend = api
    for query, expected in (("name=%5E(a%2B)%2B%24", []),
                            ("name=%5E(a%2B)%2B%24%7C!%24", [LONG_NAME])):
        resp = _get(client, query)
        if backend == "mysql":
            assert "simpler pattern" in _fault(resp)
            continue
        assert resp.status_code == 200, resp.json
        assert [s["name"] for s in resp.json["servers"]] == expected
    # Ordinary patterns still match as substrings, as in Nova.
    resp = _get(client, "name=web-1")
    assert sorted(s["name"] for s in resp.json["servers"]) == ["web-1", "web-10", "web-11"]
