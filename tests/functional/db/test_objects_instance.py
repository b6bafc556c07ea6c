"""Instances on every backend: create, list/paginate, task_state CAS, soft delete."""

import datetime
import threading

import pytest

from volumesvc import exception
from volumesvc.db import api as db_api
from volumesvc.objects import block_device, instance

FLAVOR = {"flavorid": "42", "name": "m1.nano", "vcpus": 1, "memory_mb": 64, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


def _create(db, ctx, **values):
    base = {"project_id": "p1", "user_id": "u1", "display_name": "vm", "vm_state": "active",
            "host": "host1", "flavor_id": 6, "flavor": FLAVOR, "metadata": {"k": "v"}}
    base.update(values)
    return instance.create(db, ctx, base)


def test_create_and_get(db, ctx):
    inst = _create(db, ctx, tags=["a"])
    assert inst.uuid and inst.instance_name == f"instance-{inst.id:08x}"
    got = instance.get_by_uuid(db, ctx, inst.uuid)
    assert got == inst
    assert got.flavor == FLAVOR and got.metadata == {"k": "v"} and got.tags == ["a"]
    assert instance.Instance.from_dict(got.to_dict()) == got
    with pytest.raises(exception.InstanceNotFound):
        instance.get_by_uuid(db, ctx, "missing")
    with pytest.raises(exception.Invalid):
        instance.create(db, ctx, {"admin_pass": "secret"})


def test_list_filters_and_pagination(db, ctx):
    made = [_create(db, ctx, display_name=f"web-{i}", project_id="p1" if i < 4 else "p2",
                    host="h1" if i % 2 else "h2") for i in range(6)]
    newest_first = [i.uuid for i in reversed(made)]
    assert [i.uuid for i in instance.list_instances(db, ctx)] == newest_first
    assert len(instance.list_instances(db, ctx, project_id="p1")) == 4
    assert len(instance.list_instances(db, ctx, host="h1", project_id="p1")) == 2
    assert [i.display_name for i in instance.list_instances(db, ctx, name="b-5")] == ["web-5"]
    # LIKE wildcards in the name are literal.
    assert instance.list_instances(db, ctx, name="web_%") == []
    page1 = instance.list_instances(db, ctx, limit=4)
    page2 = instance.list_instances(db, ctx, limit=4, marker=page1[-1].uuid)
    assert [i.uuid for i in page1 + page2] == newest_first
    with pytest.raises(exception.MarkerNotFound):
        instance.list_instances(db, ctx, marker="missing")
    instance.save(db, ctx, made[0].uuid, {"vm_state": "error"})
    assert [i.uuid for i in instance.list_instances(db, ctx, vm_state=["error"])] == [
        made[0].uuid]


def test_regex_time_and_zone_filters_behave_alike_on_every_backend(db, ctx):
    """The API's filters (InstanceFilters) in the SQL of each backend."""
    from volumesvc.objects import service as service_obj
    from volumesvc.objects.instance_filters import InstanceFilters

    service_obj.heartbeat(db, ctx, host="h-east", binary="volumesvc-compute",
                          topic="compute", version=1,
                          capabilities={"availability_zone": "east"})
    service_obj.heartbeat(db, ctx, host="host1", binary="volumesvc-compute",
                          topic="compute", version=1, capabilities={})
    made = {name: _create(db, ctx, display_name=name, host=host, power_state=power,
                          availability_zone=zone, launched_at=launched)
            for name, host, power, zone, launched in (
                ("web-1", "h-east", 1, None, datetime.datetime(2026, 3, 1, 12, 0, 5)),
                ("web-10", "host1", 4, None, None),
                ("db-1", None, 0, "east", None))}

    def names(**filters):
        return sorted(i.display_name for i in instance.list_instances(
            db, ctx, filters=InstanceFilters(**filters)))

    assert names(regex={"display_name": "^web-1$"}) == ["web-1"]
    assert names(regex={"display_name": "-1"}) == ["db-1", "web-1", "web-10"]
    assert names(regex={"launched_at": "^2026-03-01 12:00:05"}) == ["web-1"]
    assert names(exact={"power_state": [0, 4]}) == ["db-1", "web-10"]
    # The zone of the host; without a host, the zone the server asked for.
    assert names(zone="^east$") == ["db-1", "web-1"]
    assert names(zone="nova") == ["web-10"]
    updated = instance.get_by_uuid(db, ctx, made["web-10"].uuid).updated_at or \
        made["web-10"].created_at
    assert "web-10" in names(since=updated)
    assert names(before=updated - datetime.timedelta(days=1)) == []


def test_a_backtracking_pattern_answers_on_every_backend(db, ctx, backend):
    """``^(a+)+$`` against a name of 60 a's and a "!" (a backtracking REGEXP took 8 s at 28).

    A backtracking engine needs about 2**60 steps for that row, so the list
    answers only where nothing backtracks: RE2 as SQLite's REGEXP, the DFA
    of PostgreSQL. MariaDB's PCRE2 backtracks up to its match limit and then
    calls the row unmatched; that is refused instead of a silently short
    list (the second pattern matches the name through its other branch).
    """
    from volumesvc.objects.instance_filters import InstanceFilters

    _create(db, ctx, display_name="a" * 60 + "!")

    def names(pattern):
        return [i.display_name for i in instance.list_instances(
            db, ctx, filters=InstanceFilters(regex={"display_name": pattern}))]

    if backend == "mysql":
        for pattern in ("^(a+)+$", "^(a+)+$|!$"):
            with pytest.raises(exception.FilterPatternTooComplex):
                names(pattern)
        return
    assert names("^(a+)+$") == []
    assert names("^(a+)+$|!$") == ["a" * 60 + "!"]


def test_save_compare_and_swap(db, ctx):
    inst = _create(db, ctx)
    saved = instance.save(db, ctx, inst.uuid, {"task_state": "attaching"},
                          expected_task_state=None)
    assert saved.task_state == "attaching" and saved.updated_at is not None
    with pytest.raises(exception.UnexpectedTaskStateError) as err:
        instance.save(db, ctx, inst.uuid, {"task_state": "detaching"}, expected_task_state=None)
    assert "attaching" in str(err.value)
    saved = instance.save(db, ctx, inst.uuid, {"task_state": None},
                          expected_task_state=["attaching", "detaching"])
    assert saved.task_state is None
    # Without expected_task_state the write is unconditional.
    assert instance.save(db, ctx, inst.uuid, {"task_state": "x"}).task_state == "x"
    with pytest.raises(exception.InstanceNotFound):
        instance.save(db, ctx, "missing", {"task_state": None}, expected_task_state=None)


def test_concurrent_compare_and_swap_has_one_winner(db, ctx):
    """Two writers (separate engines, as two processes would have) race for the same task."""
    inst = _create(db, ctx)
    other = db_api.Database(db.conf)
    barrier = threading.Barrier(2)
    outcomes = {}

    def attempt(name, database, task):
        barrier.wait()
        try:
            instance.save(database, None, inst.uuid, {"task_state": task},
                          expected_task_state=None)
            outcomes[name] = "won"
        except exception.UnexpectedTaskStateError:
            outcomes[name] = "lost"

    try:
        for _ in range(5):
            instance.save(db, ctx, inst.uuid, {"task_state": None})
            outcomes.clear()
            threads = [threading.Thread(target=attempt, args=("a", db, "attaching")),
                       threading.Thread(target=attempt, args=("b", other, "detaching"))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert sorted(outcomes.values()) == ["lost", "won"]
            winner = "attaching" if outcomes["a"] == "won" else "detaching"
            assert instance.get_by_uuid(db, ctx, inst.uuid).task_state == winner
    finally:
        other.dispose()


def test_destroy_is_soft_and_takes_bdms(db, ctx):
    inst = _create(db, ctx)
    bdm = block_device.create(db, ctx, {"instance_uuid": inst.uuid, "source_type": "volume",
                                        "destination_type": "volume", "volume_id": "v1"})
    gone = instance.destroy(db, ctx, inst.uuid)
    assert gone.deleted and gone.deleted_at is not None and gone.terminated_at is not None
    with pytest.raises(exception.InstanceNotFound):
        instance.get_by_uuid(db, ctx, inst.uuid)
    assert instance.get_by_uuid(db, ctx, inst.uuid, read_deleted="yes").uuid == inst.uuid
    assert instance.list_instances(db, ctx) == []
    assert [i.uuid for i in instance.list_instances(db, ctx, deleted=True)] == [inst.uuid]
    assert block_device.list_by_instance(db, ctx, inst.uuid) == []
    kept = block_device.get_by_uuid(db, ctx, bdm.uuid, read_deleted="yes")
    assert kept.deleted and kept.volume_id == "v1"
    with pytest.raises(exception.InstanceNotFound):
        instance.destroy(db, ctx, inst.uuid)


def test_destroy_checks_expected_task_state(db, ctx):
    inst = _create(db, ctx, task_state="deleting")
    with pytest.raises(exception.UnexpectedTaskStateError):
        instance.destroy(db, ctx, inst.uuid, expected_task_state=None)
    assert instance.destroy(db, ctx, inst.uuid, expected_task_state="deleting").deleted


def test_count_by_host_counts_live_instances_of_the_given_hosts(db, ctx):
    """The scheduler's load figure (issue 15: one query, not every instance loaded)."""
    made = [_create(db, ctx, host="h1" if i < 3 else "h2") for i in range(5)]
    _create(db, ctx, host="h3")
    instance.destroy(db, ctx, made[0].uuid)
    assert instance.count_by_host(db, ctx, ["h1", "h2", "empty"]) == {
        "h1": 2, "h2": 2, "empty": 0}
    assert instance.count_by_host(db, ctx, []) == {}
