"""The conductor's writes for computes survive being a database deadlock's victim.

MariaDB ends one of two colliding transactions with a deadlock error and
rolls it back; under a storm of builds and attaches that hit a compute's
BDM or action-event write and ended the build in ERROR ("Remote error:
DBDeadlock"). Here the deadlock is raised from the real statement, inside
the real transaction on SQLite, so the rollback and the second run are the
real ones.
"""

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from tests.fixtures import database as db_fixtures
from volumesvc import context as vs_context
from volumesvc.conductor.manager import ConductorManager
from volumesvc.conf import get_conf
from volumesvc.db import models
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.states import attach_states


@pytest.fixture
def world(tmp_path):
    conf = get_conf(default_config_files=[])
    db = db_fixtures.sqlite_database(conf, str(tmp_path / "db"))
    manager = ConductorManager(conf, db=db, compute_rpcapi=None, cinder=None)
    admin = vs_context.get_admin_context()
    instance = instance_obj.create(db, admin, {
        "project_id": "p1", "user_id": "u1", "vm_state": "building", "host": "cmp-1"})
    yield manager, db, admin, instance
    db.dispose()


def _deadlock(db, table, times):
    """The next ``times`` INSERTs or UPDATEs of ``table`` fail as a deadlock's victim."""
    left = [times]

    def before(conn, cursor, statement, parameters, context, executemany):
        verb = statement.lstrip().split(" ", 1)[0].upper()
        if left[0] and verb in ("INSERT", "UPDATE") and f" {table}" in statement:
            left[0] -= 1
            raise db_exc.DBDeadlock()

    sa.event.listen(db.get_engine(), "before_cursor_execute", before)
    return left


def _bdms(db, admin, instance):
    with db.reader(admin) as session:
        return session.scalars(sa.select(models.BlockDeviceMapping).where(
            models.BlockDeviceMapping.instance_uuid == instance.uuid)).all()


def test_a_bdm_created_for_a_build_is_written_once_after_a_deadlock(world):
    manager, db, admin, instance = world
    left = _deadlock(db, "block_device_mappings", 2)
    created = manager.bdm_create(admin, values={
        "instance_uuid": instance.uuid, "source_type": "volume", "destination_type": "volume",
        "volume_id": "vol-1", "device_name": "/dev/vda", "boot_index": 0,
        "attach_status": attach_states.ATTACHING})
    assert left == [0]
    rows = _bdms(db, admin, instance)
    assert [r.uuid for r in rows] == [created["uuid"]]


def test_a_status_save_and_its_event_finish_are_run_again_together(world):
    manager, db, admin, instance = world
    bdm = bdm_obj.create(db, admin, {
        "instance_uuid": instance.uuid, "source_type": "volume", "destination_type": "volume",
        "volume_id": "vol-2", "device_name": "/dev/vdb",
        "attach_status": attach_states.ATTACHING})
    action_obj.action_start(db, admin, instance.uuid, "attach_volume", "req-1", "u1", "p1")
    manager.action_event_start(admin, instance_uuid=instance.uuid, request_id="req-1",
                               event="compute_attach_volume", host="cmp-1")
    # The event's finish is the write that deadlocks: the BDM's save in the
    # same transaction is rolled back with it and both are run again.
    left = _deadlock(db, "instance_actions_events", 1)
    saved = manager.bdm_update(
        admin, bdm_uuid=bdm.uuid, values={"attach_status": attach_states.ATTACHED},
        finish_event={"instance_uuid": instance.uuid, "request_id": "req-1",
                      "event": "compute_attach_volume", "result": "Success"})
    assert left == [0]
    assert saved["attach_status"] == attach_states.ATTACHED
    (event,) = action_obj.get_action(db, admin, instance.uuid, "req-1").events
    assert event.result == "Success"


def test_an_instance_save_deadlocked_every_time_gives_up_with_the_deadlock(world):
    manager, db, admin, instance = world
    left = _deadlock(db, "instances", 100)
    with pytest.raises(db_exc.DBDeadlock):
        manager.instance_update(admin, instance_uuid=instance.uuid,
                                values={"vm_state": "active"})
    assert 100 - left[0] == 6  # the first run and five more
    assert instance_obj.get_by_uuid(db, admin, instance.uuid).vm_state == "building"
