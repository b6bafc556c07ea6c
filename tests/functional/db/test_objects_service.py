"""Service records on every backend: heartbeat, updates, soft delete, minimum version."""

import pytest

from volumesvc import exception
from volumesvc.objects import service

COMPUTE = "volumesvc-compute"
CAPS = {"supports_multiattach": True, "supports_extend_volume": True,
        "supports_tagged_attach_volume": True}


def _beat(db, host="host1", version=3, binary=COMPUTE, capabilities=CAPS):
    return service.heartbeat(db, None, host=host, binary=binary, topic="compute",
                             version=version, capabilities=capabilities)


def test_heartbeat_creates_then_updates(db):
    first = _beat(db, version=2)
    assert first.report_count == 1 and first.version == 2
    assert first.capabilities == CAPS and first.availability_zone == "nova"
    assert first.uuid and first.last_seen_up is not None
    second = _beat(db, version=3, capabilities={"supports_multiattach": False})
    assert second.uuid == first.uuid
    assert second.report_count == 2 and second.version == 3
    assert second.capabilities == {"supports_multiattach": False}
    assert second.last_seen_up >= first.last_seen_up
    assert len(service.list_services(db, None)) == 1


def test_get_and_list(db, ctx):
    one = _beat(db, host="a")
    _beat(db, host="b")
    _beat(db, host="a", binary="volumesvc-conductor")
    assert service.get_by_uuid(db, ctx, one.uuid) == one
    assert service.get_by_id(db, ctx, one.id).uuid == one.uuid
    assert service.get_by_host_and_binary(db, ctx, "a", COMPUTE).uuid == one.uuid
    assert [s.host for s in service.list_services(db, ctx, binary=COMPUTE)] == ["a", "b"]
    assert len(service.list_services(db, ctx, host="a")) == 2
    with pytest.raises(exception.ServiceNotFound):
        service.get_by_uuid(db, ctx, "missing")
    with pytest.raises(exception.HostBinaryNotFound):
        service.get_by_host_and_binary(db, ctx, "c", COMPUTE)


def test_update_operator_fields(db, ctx):
    svc = _beat(db)
    updated = service.update(db, ctx, svc.uuid, disabled=True, disabled_reason="maintenance",
                             forced_down=True)
    assert (updated.disabled, updated.disabled_reason, updated.forced_down) == (
        True, "maintenance", True)
    # A heartbeat does not undo what the operator set.
    assert _beat(db).disabled is True
    with pytest.raises(exception.Invalid):
        service.update(db, ctx, svc.uuid, version=99)
    with pytest.raises(exception.ServiceNotFound):
        service.update(db, ctx, "missing", disabled=True)


def test_destroy_is_soft_and_host_can_come_back(db, ctx):
    old = _beat(db)
    service.destroy(db, ctx, old.uuid)
    with pytest.raises(exception.ServiceNotFound):
        service.get_by_uuid(db, ctx, old.uuid)
    assert service.list_services(db, ctx) == []
    deleted = service.list_services(db, ctx, read_deleted="only")
    assert [s.uuid for s in deleted] == [old.uuid] and deleted[0].deleted
    new = _beat(db)
    assert new.uuid != old.uuid and new.report_count == 1
    # Deleting the second registration too must not collide with the first.
    service.destroy(db, ctx, new.uuid)
    assert len(service.list_services(db, ctx, read_deleted="yes")) == 2


def test_minimum_version(db, ctx):
    assert service.get_minimum_version(db, ctx, COMPUTE) == 0
    _beat(db, host="a", version=5)
    _beat(db, host="b", version=0)  # never reported: ignored
    gone = _beat(db, host="c", version=1)
    service.destroy(db, ctx, gone.uuid)  # deleted: ignored
    _beat(db, host="d", version=2, binary="volumesvc-conductor")  # other binary
    assert service.get_minimum_version(db, ctx, COMPUTE) == 5
    _beat(db, host="e", version=4)
    assert service.get_minimum_version(db, ctx, COMPUTE) == 4
    assert service.get_minimum_version(db, ctx, "volumesvc-conductor") == 2


def test_dict_round_trip(db):
    svc = _beat(db)
    values = svc.to_dict()
    assert isinstance(values["last_seen_up"], str)
    assert service.Service.from_dict(values) == svc
