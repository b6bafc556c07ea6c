"""The instances quota under a storm of concurrent boots, on SQLite, PostgreSQL and MariaDB.

Each boot goes through ``logic/build.create_instances`` (what POST /servers
runs after validation), in its own thread with its own connection, so the
count and the insert of different boots really interleave unless the
per-project lock of volumesvc/quota.py orders them.
"""

import concurrent.futures
import types

import pytest

from volumesvc import context as vs_context
from volumesvc import exception, quota
from volumesvc.api.logic import build
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects import instance as instance_obj


class _Conductor:
    def build_instances(self, ctx, instance_uuids, request_spec):
        pass


def _ctx():
    return vs_context.RequestContext(user_id="u", project_id="storm", roles=["member"],
                                     overwrite=False)


def _boot(deps, flavor):
    request = build.BuildRequest(name="s", flavor=flavor, bdms=[])
    try:
        build.create_instances(_ctx(), deps, request)
    except exception.TooManyInstances as exc:
        return exc.format_message()
    return "booted"


@pytest.mark.parametrize("boots, limit", [(40, 30)])
def test_concurrent_boots_leave_exactly_the_quota(db, boots, limit):
    ctx = _ctx()
    quota.set_limits(db, ctx, "storm", {"instances": limit, "cores": -1, "ram": -1})
    deps = types.SimpleNamespace(db=db, conf=db.conf, cinder=None, conductor=_Conductor())
    flavor = flavor_obj.get_by_flavorid(db, ctx, "42")
    with concurrent.futures.ThreadPoolExecutor(max_workers=boots) as pool:
        results = list(pool.map(lambda _: _boot(deps, flavor), range(boots)))
    assert results.count("booted") == limit
    assert set(results) - {"booted"} == {
        f"Quota exceeded for instances: Requested 1, but already used {limit} of {limit} "
        "instances"}
    assert len(instance_obj.list_instances(db, ctx, project_id="storm")) == limit
