"""Instance faults on every backend: the newest one per instance."""

from volumesvc.objects import instance, instance_fault


def test_latest_fault_per_instance(db, ctx):
    a = instance.create(db, ctx, {"project_id": "p1"})
    b = instance.create(db, ctx, {"project_id": "p1"})
    c = instance.create(db, ctx, {"project_id": "p1"})
    instance_fault.create(db, ctx, instance_uuid=a.uuid, code=500, message="first")
    newest = instance_fault.create(db, ctx, instance_uuid=a.uuid, code=409, message="x" * 300,
                                   details="trace", host="h1")
    instance_fault.create(db, ctx, instance_uuid=b.uuid, code=500, message="b")
    assert len(newest.message) == instance_fault.MESSAGE_LENGTH
    faults = instance_fault.latest_for_instances(db, ctx, [a.uuid, b.uuid, c.uuid])
    assert set(faults) == {a.uuid, b.uuid}
    assert faults[a.uuid] == newest and faults[a.uuid].code == 409
    assert instance_fault.latest(db, ctx, c.uuid) is None
    assert instance_fault.latest_for_instances(db, ctx, []) == {}
    assert instance_fault.InstanceFault.from_dict(newest.to_dict()) == newest
