"""compute_host.get and list_hosts read the service records; the conductor's cache spares reads."""

import types

import sqlalchemy as sa

from volumesvc.objects import compute_host, service

COMPUTE = "volumesvc-compute"
CONF = types.SimpleNamespace(service_down_time=60)


def _beat(db, host, binary=COMPUTE, **caps):
    return service.heartbeat(db, None, host=host, binary=binary, topic="compute", version=1,
                             capabilities=caps or None)


def test_get_reads_the_compute_record(db, ctx):
    _beat(db, "a", supports_multiattach=True)
    _beat(db, "b", binary="volumesvc-conductor")
    view = compute_host.get(CONF, db, ctx, "a")
    assert (view.host, view.registered, view.up, view.version) == ("a", True, True, 1)
    assert view.supports("supports_multiattach") is True
    # A conductor's record is not a compute.
    assert compute_host.get(CONF, db, ctx, "b") == compute_host.ComputeHost(host="b")
    assert not compute_host.get(CONF, db, ctx, "nowhere").registered


def test_get_sees_operator_changes(db, ctx):
    record = _beat(db, "a")
    service.update(db, ctx, record.uuid, disabled=True)
    assert compute_host.get(CONF, db, ctx, "a").host_status == "MAINTENANCE"
    service.update(db, ctx, record.uuid, forced_down=True)
    assert not compute_host.get(CONF, db, ctx, "a").up


def test_list_hosts_gives_every_compute_in_registration_order(db, ctx):
    _beat(db, "b")
    _beat(db, "a")
    _beat(db, "c", binary="volumesvc-conductor")
    assert [v.host for v in compute_host.list_hosts(CONF, db, ctx)] == ["b", "a"]


def test_cache_answers_an_up_host_without_reading_until_the_ttl(db, ctx):
    clock = [100.0]
    cache = compute_host.UpCache(CONF, ttl=1.0, clock=lambda: clock[0])
    record = _beat(db, "a")
    assert compute_host.get(CONF, db, ctx, "a", cache=cache).up
    service.update(db, ctx, record.uuid, forced_down=True)
    assert compute_host.get(CONF, db, ctx, "a", cache=cache).up  # remembered
    clock[0] += 1.5
    assert not compute_host.get(CONF, db, ctx, "a", cache=cache).up  # read again
    service.update(db, ctx, record.uuid, forced_down=False)
    assert compute_host.get(CONF, db, ctx, "a", cache=cache).up  # down was not remembered


def test_version_of_one_host(db, ctx):
    """The per-server gate's reading: the host's last report, 0 without a live record."""
    assert compute_host.get(CONF, db, ctx, "a").version == 0
    gone = service.heartbeat(db, None, host="a", binary=COMPUTE, topic="compute", version=2)
    assert compute_host.get(CONF, db, ctx, "a").version == 2
    service.destroy(db, ctx, gone.uuid)
    assert compute_host.get(CONF, db, ctx, "a") == compute_host.ComputeHost(host="a")


def test_a_storm_of_lookups_through_the_cache_reads_the_record_once_per_ttl(db, ctx):
    """Why the conductor keeps the cache: tens of attaches a second, one row read a second."""
    clock = [100.0]
    cache = compute_host.UpCache(CONF, ttl=1.0, clock=lambda: clock[0])
    _beat(db, "a", supports_multiattach=True)
    reads = []

    def count(conn, cursor, statement, *args):
        if "FROM services" in statement:
            reads.append(statement)

    engine = db.get_engine()
    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        for _ in range(20):
            view = compute_host.get(CONF, db, ctx, "a", cache=cache)
            assert view.up and view.supports("supports_multiattach")
        assert len(reads) == 1
        clock[0] += 1.5
        compute_host.get(CONF, db, ctx, "a", cache=cache)
        assert len(reads) == 2
        compute_host.get(CONF, db, ctx, "a")  # no cache: always read
        assert len(reads) == 3
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
