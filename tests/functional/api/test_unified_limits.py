"""``[quota] driver = unified_limits``: instances, cores and ram limits from Keystone.

Keystone is oslo.limit's own test double here (``oslo_limit.fixture``: the
registered limits and project limits the library reads); the real Keystone
runs in tests/integration/keystone/test_unified_limits.py. Usage is counted
from the database under the project's lock as in database mode.
"""

import concurrent.futures

import pytest
from oslo_limit import fixture as limit_fixture

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServersWorld as world

ALICE_PROJECT = "7e57000000000000000000000000a11c"
ALICE = {"X-Auth-Token": f"alice:{ALICE_PROJECT}", "OpenStack-API-Version": "compute 2.90"}
ADMIN = {"X-Auth-Token": "admin:admin-project", "OpenStack-API-Version": "compute 2.90"}
REGISTERED = {"servers": 2, "class:VCPU": 10, "class:MEMORY_MB": 4096}
PROJECT = {ALICE_PROJECT: {"servers": 3, "class:MEMORY_MB": -1}}


@pytest.fixture
def api():
    with limit_fixture.LimitFixture(REGISTERED, PROJECT), \
            fixtures.open_world(world) as (app, deps):
        deps.conf.set_override("driver", "unified_limits", group="quota")
        deps.conf.set_override("endpoint_id", "compute-endpoint", group="oslo_limit")
        yield app, deps


def _boot(app):
    return app.test_client().post("/v2.1/servers", headers=ALICE, json={"server": {
        "name": "u", "flavorRef": "101", "networks": "none", "imageRef": world.IMAGE}})


def test_limits_and_quota_sets_show_keystones_limits(api):
    app, _ = api
    client = app.test_client()
    absolute = client.get("/v2.1/limits", headers=ALICE).json["limits"]["absolute"]
    assert (absolute["maxTotalInstances"], absolute["maxTotalCores"],
            absolute["maxTotalRAMSize"]) == (3, 10, -1)
    shown = client.get(f"/v2.1/os-quota-sets/{ALICE_PROJECT}", headers=ALICE).json
    assert (shown["quota_set"]["instances"], shown["quota_set"]["cores"]) == (3, 10)
    defaults = client.get(f"/v2.1/os-quota-sets/{ALICE_PROJECT}/defaults",
                          headers=ALICE).json["quota_set"]
    assert (defaults["instances"], defaults["cores"], defaults["ram"]) == (2, 10, 4096)
    # Other projects get the registered limits.
    other = client.get("/v2.1/os-quota-sets/another", headers=ADMIN).json["quota_set"]
    assert (other["instances"], other["ram"]) == (2, 4096)


def test_quota_set_changes_are_refused(api):
    app, _ = api
    client = app.test_client()
    resp = client.put(f"/v2.1/os-quota-sets/{ALICE_PROJECT}", headers=ADMIN,
                      json={"quota_set": {"instances": 50}})
    assert resp.status_code == 400
    assert "Keystone" in resp.json["badRequest"]["message"]
    assert client.delete(f"/v2.1/os-quota-sets/{ALICE_PROJECT}",
                         headers=ADMIN).status_code == 400


def test_a_storm_of_boots_stops_at_the_project_limit(api):
    app, _ = api
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(lambda _: _boot(app).status_code, range(8)))
    assert sorted(codes) == [202] * 3 + [403] * 5
    resp = _boot(app)
    assert resp.status_code == 403
    assert resp.json["forbidden"]["message"].startswith("Quota exceeded for instances")
