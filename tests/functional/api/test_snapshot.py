"""logic/snapshot.py against a real database and the fakes: ordering, failures."""

import pytest

from tests.fixtures import database as db_fixtures
from tests.fixtures.glance import FakeGlance
from tests.functional.api.fixtures import ServerActionsWorld as world
from tests.functional.api.fixtures import _conf
from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.api.logic import snapshot
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj


@pytest.fixture
def env():
    conf = _conf()
    with db_fixtures.fresh_sqlite_database(conf) as db:
        ctx = vs_context.get_admin_context()
        world.seed(db, ctx)
        user = vs_context.RequestContext(user_id="demo", project_id=world.PROJECT,
                                         request_id="req-snap-1")
        instance = instance_obj.get_by_uuid(db, ctx, world.server_uuid(1))
        yield db, user, instance, world.make_cinder(), FakeGlance()


def test_local_disks_first_then_one_snapshot_per_volume(env):
    db, ctx, instance, cinder, glance = env
    image = snapshot.snapshot_volume_backed(ctx, db=db, cinder=cinder, glance=glance,
                                            instance=instance, name="n")
    mapping = world.image_mapping(image)
    assert [(m["source_type"], m["volume_type"]) for m in mapping] == [
        ("blank", None), ("snapshot", "fast"), ("snapshot", "slow")]
    assert all(list(m) == list(snapshot.IMAGE_MAPPING_KEYS) for m in mapping)
    assert [c[0] for c in cinder.calls].count("create_snapshot_force") == 2


def test_volume_type_falls_back_to_the_bdm(env):
    db, ctx, instance, cinder, glance = env
    for volume in cinder.volumes.values():
        volume["volume_type"] = None
    from volumesvc.objects import block_device as bdm_obj

    bdms = bdm_obj.list_by_instance(db, ctx, instance.uuid)
    bdms[0].volume_type = "from-boot"
    image = snapshot.snapshot_volume_backed(ctx, db=db, cinder=cinder, glance=glance,
                                            instance=instance, name="n", bdms=bdms)
    assert [m["volume_type"] for m in world.image_mapping(image)] == [None, "from-boot", None]


def test_a_failed_snapshot_marks_the_event_error(env):
    db, ctx, instance, cinder, glance = env
    del cinder.volumes[world.VOL_DATA]
    with pytest.raises(exception.VolumeNotFound):
        snapshot.snapshot_volume_backed(ctx, db=db, cinder=cinder, glance=glance,
                                        instance=instance, name="n")
    action = action_obj.get_action(db, ctx, instance.uuid, "req-snap-1")
    assert action.message == "Error"
    assert action.events[0].result == "Error"
    assert "VolumeNotFound" in action.events[0].traceback
    assert glance.images == {}


def test_unlimited_quota(env):
    db, ctx, instance, cinder, glance = env
    cinder.get_absolute_limits = lambda c: {"maxTotalSnapshots": -1, "totalSnapshotsUsed": 99}
    snapshot.check_snapshot_quota(cinder, ctx, 50)
    cinder.get_absolute_limits = lambda c: {"maxTotalSnapshots": 3, "totalSnapshotsUsed": 2}
    with pytest.raises(exception.OverQuota):
        snapshot.check_snapshot_quota(cinder, ctx, 2)
