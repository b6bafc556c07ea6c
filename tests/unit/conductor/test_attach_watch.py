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
