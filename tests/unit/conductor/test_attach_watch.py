"""The conductor casts an attach again that did not reach its compute (SQLite).

A recording double stands in for the compute RPC client.
"""

import time

import pytest

from tests.fixtures import database as db_fixtures
from volumesvc import context as vs_context
from volumesvc.conductor import attach_watch
from volumesvc.conf import get_conf
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import attach_states


class Casts:
    def __init__(self):
        self.attaches = []

    def attach_volume(self, ctxt, **kwargs):
        self.attaches.append(kwargs)


@pytest.fixture
def setup(tmp_path):
    conf = get_conf(default_config_files=[])
    conf.set_override("attachment_reservation_timeout", 1, group="compute")
    db = db_fixtures.sqlite_database(conf, str(tmp_path / "db"))
    ctx = vs_context.get_admin_context()
    server = instance_obj.create(db, ctx, {"project_id": "p1", "vm_state": "active",
                                           "host": "cmp-1"})
    bdm = bdm_obj.create(db, ctx, {
        "instance_uuid": server.uuid, "source_type": "volume", "destination_type": "volume",
        "volume_id": "vol-1", "device_name": "/dev/sdb", "attachment_id": "att-1",
        "attach_status": attach_states.ATTACHING})
    casts = Casts()
    watch = attach_watch.AttachWatch(conf, db=db, compute_rpcapi=casts)
    yield watch, db, ctx, bdm, casts
    watch.stop()
    db.dispose()


def test_an_attach_that_never_arrived_is_cast_again_then_left_to_the_compute(setup):
    watch, _db, ctx, bdm, casts = setup
    assert watch.check(ctx, "cmp-1", bdm.to_dict(), False, 1)
    (again,) = casts.attaches
    assert again["recovered"] is True and again["event_started"] is True
    assert again["host"] == "cmp-1" and again["bdm"]["uuid"] == bdm.uuid
    # The last allowed cast was made: the compute's reconciliation takes over.
    assert not watch.check(ctx, "cmp-1", bdm.to_dict(), False, attach_watch.ATTEMPTS)
    assert len(casts.attaches) == 1


def test_an_attach_that_arrived_or_went_is_left_alone(setup):
    watch, db, ctx, bdm, casts = setup
    assert not watch.check(ctx, "cmp-2", bdm.to_dict(), False, 1)  # the server moved
    bdm_obj.save(db, ctx, bdm.uuid, {"connection_info": "{}",
                                     "attach_status": attach_states.ATTACHED})
    assert not watch.check(ctx, "cmp-1", bdm.to_dict(), False, 1)
    bdm_obj.destroy(db, ctx, bdm.uuid)
    assert not watch.check(ctx, "cmp-1", bdm.to_dict(), False, 1)
    assert casts.attaches == []


def test_the_check_comes_due_after_the_reservation_timeout(setup):
    watch, _db, ctx, bdm, casts = setup
    start = time.monotonic()
    watch.add(ctx, host="cmp-1", bdm=bdm.to_dict(), multiattach=False)
    while not casts.attaches and time.monotonic() < start + 10:
        time.sleep(0.05)
    assert [c["bdm"]["uuid"] for c in casts.attaches] == [bdm.uuid]
    assert time.monotonic() - start >= 2  # the reservation timeout (1 s) + 1


def test_a_started_compute_makes_its_checks_due_at_once(setup):
    watch, _db, ctx, bdm, casts = setup
    watch.conf.set_override("attachment_reservation_timeout", 600, group="compute")
    watch.add(ctx, host="cmp-1", bdm=bdm.to_dict(), multiattach=False)
    watch.add(ctx, host="cmp-2", bdm=dict(bdm.to_dict(), uuid="other"), multiattach=False)
    assert watch.due_now("cmp-3") == 0
    start = time.monotonic()
    assert watch.due_now("cmp-1") == 1
    while not casts.attaches and time.monotonic() < start + 10:
        time.sleep(0.05)
    # Only cmp-1's attach, at once, counted as the second cast (watched again).
    assert [c["bdm"]["uuid"] for c in casts.attaches] == [bdm.uuid]
    assert time.monotonic() - start < 5
    assert sorted(entry[2][1][4] for entry in watch._due) == [1, 2]


class FlakyCinder:
    """Cinder whose attachment listing fails ``outages`` times, then answers."""

    def __init__(self, outages, error):
        self.outages = outages
        self.error = error
        self.deleted = []

    def attachment_get_all(self, ctxt, **filters):
        if self.outages:
            self.outages -= 1
            raise self.error
        return [{"id": "att-lost", "status": "reserved"}, {"id": "att-1", "status": "reserved"}]

    def attachment_delete(self, ctxt, attachment_id):
        self.deleted.append(attachment_id)


class LostAnswerTask:
    def __init__(self, db, ctx, instance_uuid, cinder):
        self.db, self.context, self.cinder = db, ctx, cinder
        self.instance_uuid, self.volume_id = instance_uuid, "vol-1"


def test_a_release_that_finds_cinder_away_is_tried_again_until_it_is_done(setup):
    from volumesvc import exception

    watch, db, ctx, bdm, _casts = setup
    cinder = FlakyCinder(1, exception.CinderConnectionFailed(reason="refused"))
    task = LostAnswerTask(db, ctx, bdm.instance_uuid, cinder)
    start = time.monotonic()
    watch.release_later(task)
    while not cinder.deleted and time.monotonic() < start + 15:
        time.sleep(0.05)
    # The known attachment (att-1, the BDM's) stays; only the lost one goes.
    assert cinder.deleted == ["att-lost"]
    assert time.monotonic() - start >= 4  # two due checks: 2 s each


def test_a_release_gives_up_after_its_attempts_and_never_retries_a_4xx(setup):
    from volumesvc import exception

    watch, db, ctx, bdm, _casts = setup
    down = FlakyCinder(99, exception.CinderAPIError(code=503, reason="busy"))
    task = LostAnswerTask(db, ctx, bdm.instance_uuid, down)
    assert watch.release(task, 1) is False and watch._due  # scheduled again
    watch._due.clear()
    assert watch.release(task, attach_watch.ATTEMPTS) is False and not watch._due
    refused = FlakyCinder(1, exception.CinderAPIError(code=403, reason="no"))
    with pytest.raises(exception.CinderAPIError):
        watch.release(LostAnswerTask(db, ctx, bdm.instance_uuid, refused), 1)
    assert down.deleted == [] and not watch._due
