"""A conductor step that fails the instance writes its state and fault together.

Regression: ``fail_instance`` (and a build the conductor could not place)
committed vm_state ERROR before the fault, so a client polling for ERROR
could read the server between the two and find no fault to show.
"""

import sqlalchemy as sa
from sqlalchemy import event, orm

from volumesvc.conductor import scheduling
from volumesvc.conductor.tasks import base
from volumesvc.objects import instance
from volumesvc.states import vm_states


def test_error_state_is_never_committed_without_its_fault(db, ctx):
    inst = instance.create(db, ctx, {"project_id": "p1"})
    seen = []

    def after_commit(session):
        # Read what another client would see right after this commit.
        with db.get_engine().connect() as conn:
            state = conn.execute(sa.text("SELECT vm_state FROM instances WHERE uuid = :u"),
                                 {"u": inst.uuid}).scalar()
            faults = conn.execute(
                sa.text("SELECT count(*) FROM instance_faults WHERE instance_uuid = :u"),
                {"u": inst.uuid}).scalar()
        seen.append((state, faults))

    event.listen(orm.Session, "after_commit", after_commit)
    try:
        base.fail_instance(db, ctx, inst.uuid, scheduling.NoValidHost(reason="none up"),
                           {"vm_state": vm_states.ERROR, "task_state": None})
    finally:
        event.remove(orm.Session, "after_commit", after_commit)
    assert seen and all(faults == 1 for state, faults in seen if state == vm_states.ERROR)
    assert seen[-1] == (vm_states.ERROR, 1)


def test_a_deleted_instance_gets_neither(db, ctx):
    base.fail_instance(db, ctx, "00000000-0000-0000-0000-000000000000",
                       RuntimeError("gone"), {"vm_state": vm_states.ERROR})
