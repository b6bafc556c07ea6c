"""volume_requests rows on every backend: the claim's compare and swap and what is owed."""

import datetime
import threading

import pytest

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.db import api as db_api
from volumesvc.db import models
from volumesvc.objects import block_device, instance
from volumesvc.objects import volume_request as request_obj

PARAMS = {"instance_uuid": "i-1", "volume_id": "v-1", "tag": "t", "multiattach": False}


def _create(db, ctx, kind=request_obj.ATTACH, volume_id="v-1"):
    return request_obj.create(db, ctx, kind=kind, instance_uuid="i-1", volume_id=volume_id,
                              params=dict(PARAMS, volume_id=volume_id))


def _age(db, ctx, request_uuid, *, seconds=0, claimed_seconds=None):
    """Move a row's creation (and claim) time ``seconds`` into the past."""
    import sqlalchemy as sa

    model = models.VolumeRequest
    now = models.utcnow()
    values = {"created_at": now - datetime.timedelta(seconds=seconds)}
    if claimed_seconds is not None:
        values["claimed_at"] = now - datetime.timedelta(seconds=claimed_seconds)
    with db.writer(ctx) as session:
        session.execute(sa.update(model).where(model.uuid == request_uuid).values(**values))


def test_create_keeps_the_context_without_its_tokens(db):
    ctx = vs_context.RequestContext(user_id="u1", project_id="p1", roles=["member"],
                                    auth_token="secret", request_id="req-1", overwrite=False)
    request = _create(db, ctx)
    assert request.attempts == 0 and request.claimed_by is None and request.created_at
    assert request.params == PARAMS
    stored = request_obj.get_by_uuid(db, ctx, request.uuid)
    assert "secret" not in repr(stored.context)
    replay = stored.request_context()
    assert (replay.user_id, replay.project_id, replay.roles, replay.request_id) == (
        "u1", "p1", ["member"], "req-1")
    assert replay.auth_token is None


def test_unknown_kinds_are_refused(db, ctx):
    with pytest.raises(ValueError):
        request_obj.create(db, ctx, kind="swap", instance_uuid="i", volume_id="v", params={})


def test_one_claim_wins(db, ctx):
    request = _create(db, ctx)
    first = request_obj.claim(db, ctx, request.uuid, "c1")
    assert first.claimed_by == "c1" and first.claimed_at and first.attempts == 1
    # A duplicate delivery, on the same or another conductor, finds it taken.
    assert request_obj.claim(db, ctx, request.uuid, "c2") is None
    assert request_obj.claim(db, ctx, request.uuid, "c1") is None
    assert request_obj.delete(db, ctx, request.uuid) is True
    # Settled and gone: a late delivery finds nothing either.
    assert request_obj.claim(db, ctx, request.uuid, "c1") is None
    assert request_obj.delete(db, ctx, request.uuid) is False


def test_reclaim_compares_the_claim_as_it_was_read(db, ctx):
    request = _create(db, ctx)
    taken = request_obj.claim(db, ctx, request.uuid, "dead")
    # Two conductors read the same row; only the first takes it over.
    winner = request_obj.reclaim(db, ctx, taken, "c1")
    assert winner.claimed_by == "c1" and winner.attempts == 2
    assert request_obj.reclaim(db, ctx, taken, "c2") is None
    # Nor can a stale read of the unclaimed row take it.
    assert request_obj.reclaim(db, ctx, request, "c2") is None
    assert request_obj.get_by_uuid(db, ctx, request.uuid).claimed_by == "c1"
    assert request_obj.claimers(db, ctx) == {"c1"}


def test_what_is_owed(db, ctx):
    young = _create(db, ctx, volume_id="v-young")
    lost = _create(db, ctx, volume_id="v-lost")
    _age(db, ctx, lost.uuid, seconds=120)
    on_dead = _create(db, ctx, volume_id="v-dead")
    request_obj.claim(db, ctx, on_dead.uuid, "dead-host")
    on_live = _create(db, ctx, volume_id="v-live")
    request_obj.claim(db, ctx, on_live.uuid, "live-host")
    _age(db, ctx, on_live.uuid, seconds=600, claimed_seconds=600)
    mine_before = _create(db, ctx, volume_id="v-mine-before")
    request_obj.claim(db, ctx, mine_before.uuid, "me")
    _age(db, ctx, mine_before.uuid, seconds=30, claimed_seconds=30)
    started_at = models.utcnow() - datetime.timedelta(seconds=10)
    mine_now = _create(db, ctx, volume_id="v-mine-now")
    request_obj.claim(db, ctx, mine_now.uuid, "me")

    owed = request_obj.list_recoverable(db, ctx, grace=60, dead_hosts={"dead-host"},
                                        host="me", started_at=started_at)
    # Oldest first: the lost cast, the predecessor's claim, the dead host's.
    assert [r.volume_id for r in owed] == ["v-lost", "v-mine-before", "v-dead"]
    assert young.uuid not in {r.uuid for r in owed}
    # Without a dead host or a start time only the lost cast is owed.
    assert [r.volume_id for r in request_obj.list_recoverable(db, ctx, grace=60)] == [
        "v-lost"]
    assert len(request_obj.list_recoverable(db, ctx, grace=1, dead_hosts={"dead-host"},
                                            host="me", started_at=started_at,
                                            limit=2)) == 2


def _create_attach(db, ctx, server, volume_id="v-1", **params):
    return request_obj.create_attach(
        db, ctx, instance_uuid=server, volume_id=volume_id,
        params=dict(PARAMS, instance_uuid=server, volume_id=volume_id, **params))


def test_one_owed_attach_per_volume_and_server(db, ctx):
    server = instance.create(db, ctx, {"project_id": "p1", "vm_state": "active"}).uuid
    owed = _create_attach(db, ctx, server, tag="first")
    with pytest.raises(exception.VolumeAttachPending) as pending:
        _create_attach(db, ctx, server, tag="second")
    assert pending.value.kwargs["pending"]["tag"] == "first"
    # Another volume, or the same volume once the request has settled, is recorded.
    _create_attach(db, ctx, server, volume_id="v-2")
    request_obj.delete(db, ctx, owed.uuid)
    block_device.create(db, ctx, {"instance_uuid": server, "source_type": "volume",
                                  "destination_type": "volume", "volume_id": "v-1"})
    with pytest.raises(exception.VolumeAlreadyAttached) as attached:
        _create_attach(db, ctx, server)
    assert not isinstance(attached.value, exception.VolumeAttachPending)
    instance.destroy(db, ctx, server)
    with pytest.raises(exception.InstanceNotFound):
        _create_attach(db, ctx, server, volume_id="v-3")


def test_identical_attaches_at_once_record_one_request(db, ctx):
    """Eight at once, each on its own engine (as API workers in separate processes)."""
    server = instance.create(db, ctx, {"project_id": "p1", "vm_state": "active"}).uuid
    databases = [db] + [db_api.Database(db.conf) for _ in range(7)]
    barrier = threading.Barrier(len(databases))
    outcomes = []

    def record(database):
        barrier.wait()
        try:
            _create_attach(database, ctx, server)
            outcomes.append("recorded")
        except exception.VolumeAttachPending:
            outcomes.append("pending")
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcomes.append(repr(exc))

    try:
        threads = [threading.Thread(target=record, args=(d,)) for d in databases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for database in databases[1:]:
            database.dispose()
    assert sorted(outcomes) == ["pending"] * 7 + ["recorded"]
