"""A host's capacity under a storm of concurrent placements, on SQLite, PostgreSQL and MariaDB.

Each build places its instance through ``conductor/scheduling.place`` (what
the conductor's build task runs) in its own thread with its own connection,
so the choices of different builds really interleave: only the claim under
the host's lock keeps the host from holding more than it reports.
"""

import concurrent.futures

import pytest

from volumesvc import binaries
from volumesvc.conductor import scheduling
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import service as service_obj
from volumesvc.states import task_states

FLAVOR = {"flavorid": "42", "name": "m1.half", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


def _place(db, ctx, uuid):
    try:
        return scheduling.place(db.conf, db, ctx, uuid,
                                scheduling.Requirements(vcpus=1, memory_mb=512),
                                expected_task_state=[task_states.SCHEDULING])
    except scheduling.NoValidHost as exc:
        return exc.format_message()


@pytest.fixture
def ratios(db):
    db.conf.set_override("ram_allocation_ratio", 1.0)
    db.conf.set_override("cpu_allocation_ratio", 16.0)
    yield
    db.conf.clear_override("ram_allocation_ratio")
    db.conf.clear_override("cpu_allocation_ratio")


def test_concurrent_builds_never_overfill_a_small_host(db, ctx, ratios):
    # Room for four flavors of 512 MiB on "small", two on "tiny".
    for host, memory_mb in (("small", 2048), ("tiny", 1024)):
        service_obj.heartbeat(db, ctx, host=host, binary=binaries.COMPUTE, topic="compute",
                              version=1, capabilities={"memory_mb": memory_mb, "vcpus": 8})
    uuids = [instance_obj.create(db, ctx, {
        "project_id": "p", "user_id": "u", "vm_state": "building",
        "task_state": task_states.SCHEDULING, "flavor": FLAVOR}).uuid for _ in range(16)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(uuids)) as pool:
        results = list(pool.map(lambda uuid: _place(db, ctx, uuid), uuids))
    placed = sorted(r for r in results if r in ("small", "tiny"))
    assert placed == ["small"] * 4 + ["tiny"] * 2
    refusals = [r for r in results if r not in ("small", "tiny")]
    assert len(refusals) == 10
    assert all("No valid host" in r and "not enough RAM" in r for r in refusals)
    hosts = instance_obj.flavor_totals_by_host(db, ctx, ["small", "tiny"])
    assert hosts == {"small": {"vcpus": 4, "memory_mb": 2048},
                     "tiny": {"vcpus": 2, "memory_mb": 1024}}


def test_a_claim_that_loses_a_deadlock_is_run_again(db, ctx, ratios, monkeypatch):
    """Regression: MariaDB chose a claim as a deadlock victim (1213) under a storm of
    placements and the build failed; the whole transaction is now run again."""
    from oslo_db import exception as db_exc

    service_obj.heartbeat(db, ctx, host="small", binary=binaries.COMPUTE, topic="compute",
                          version=1, capabilities={"memory_mb": 2048, "vcpus": 8})
    uuid = instance_obj.create(db, ctx, {
        "project_id": "p", "user_id": "u", "vm_state": "building",
        "task_state": task_states.SCHEDULING, "flavor": FLAVOR}).uuid
    real, calls = instance_obj._flavor_totals, []

    def deadlock_once(*args, **kwargs):
        if kwargs.get("locking"):  # the claim's count, under the host's lock
            calls.append(1)
            if len(calls) == 1:
                raise db_exc.DBDeadlock()
        return real(*args, **kwargs)

    monkeypatch.setattr(instance_obj, "_flavor_totals", deadlock_once)
    assert _place(db, ctx, uuid) == "small"
    assert len(calls) == 2
    assert instance_obj.get_by_uuid(db, ctx, uuid).host == "small"
