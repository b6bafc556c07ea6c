"""Accepted attach and detach requests, owed until a conductor has settled them.

The API writes a row before it casts the request to the conductors (API
2.101+), the conductor that takes the cast claims it with a compare and
swap and deletes it once the work has settled. A row that stays unclaimed
(the cast was lost) or whose claimer died is re-run by another conductor
(``conductor/volume_requests.py``). Every claim counts an attempt, so a
request that keeps killing its conductor is given up, not retried forever.
"""

import dataclasses
import datetime
import uuid as uuidlib

import sqlalchemy as sa

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base

ATTACH = "attach"
DETACH = "detach"
KINDS = (ATTACH, DETACH)

# Context keys never stored: a replay acts without the user's token (the
# Cinder adapter then authenticates with its own [cinder] credentials), and
# a token in the database would outlive its purpose.
_SECRET_KEYS = frozenset({"auth_token", "service_token"})


@dataclasses.dataclass
class VolumeRequest(base.DictMixin):
    id: int | None = None
    uuid: str | None = None
    kind: str = ATTACH
    instance_uuid: str = ""
    volume_id: str = ""
    params: dict = dataclasses.field(default_factory=dict)
    context: dict = dataclasses.field(default_factory=dict)
    created_at: datetime.datetime | None = None
    claimed_by: str | None = None
    claimed_at: datetime.datetime | None = None
    attempts: int = 0

    @classmethod
    def from_model(cls, row, **extra):
        return super().from_model(row, params=dict(row.params or {}),
                                  context=dict(row.context or {}), **extra)

    def request_context(self) -> vs_context.RequestContext:
        """The context the request was accepted with (user, project, roles, request id)."""
        return vs_context.RequestContext.from_dict(self.context, overwrite=False)


def stored_context(context) -> dict:
    """``context`` as a row keeps it: everything but its tokens."""
    return {key: value for key, value in context.to_dict().items()
            if key not in _SECRET_KEYS and "token" not in key}


def create(db, context, *, kind, instance_uuid, volume_id, params) -> VolumeRequest:
    """Record an accepted request before it is cast; returns it with its uuid."""
    if kind not in KINDS:
        raise ValueError(f"volume request kind must be one of {KINDS}, not {kind!r}")
    with db.writer(context) as session:
        row = _row(context, kind, instance_uuid, volume_id, params)
        session.add(row)
        session.flush()
        return VolumeRequest.from_model(row)


def create_attach(db, context, *, instance_uuid, volume_id, params) -> VolumeRequest:
    """Record an accepted attach, unless the server has or is getting the volume already.

    Raises ``VolumeAttachPending`` (with that request's params) while an
    accepted attach of the volume to the server is owed, and
    ``VolumeAlreadyAttached`` when the server has a live BDM of it.

    Why under the instance row's lock: the conductor writes an attach's BDM
    under that same lock (``block_device.create_for_attach``), and an attach's
    row lives from before its cast until after its BDM is written (or its
    rollback), so the check and the insert see one of the three states and
    no other: nothing (a new attach), the owed request, or the BDM. Without
    it, identical attaches sent at once each passed the API's checks, each
    was cast, and all but one failed in the conductor after asking Cinder for
    an attachment of their own.
    """
    bdm = models.BlockDeviceMapping
    model = models.VolumeRequest
    with db.writer(context) as session:
        base.lock_live_instance(session, instance_uuid)
        pending = session.scalars(sa.select(model).where(
            model.kind == ATTACH, model.instance_uuid == instance_uuid,
            model.volume_id == volume_id).order_by(model.id)).first()
        if pending is not None:
            raise exception.VolumeAttachPending(volume_id=volume_id,
                                                instance_uuids=instance_uuid,
                                                pending=dict(pending.params or {}))
        if session.scalars(sa.select(bdm.id).where(
                bdm.instance_uuid == instance_uuid, bdm.volume_id == volume_id,
                bdm.deleted == 0)).first() is not None:
            raise exception.VolumeAlreadyAttached(volume_id=volume_id,
                                                  instance_uuids=instance_uuid)
        row = _row(context, ATTACH, instance_uuid, volume_id, params)
        session.add(row)
        session.flush()
        return VolumeRequest.from_model(row)


def _row(context, kind, instance_uuid, volume_id, params):
    return models.VolumeRequest(
        uuid=str(uuidlib.uuid4()), kind=kind, instance_uuid=instance_uuid,
        volume_id=volume_id, params=dict(params), context=stored_context(context),
        created_at=base.utcnow(), attempts=0)


def get_by_uuid(db, context, request_uuid) -> VolumeRequest | None:
    with db.reader(context) as session:
        row = session.scalars(sa.select(models.VolumeRequest).where(
            models.VolumeRequest.uuid == request_uuid)).first()
        return None if row is None else VolumeRequest.from_model(row)


def delete(db, context, request_uuid) -> bool:
    """Forget a settled (or never cast) request; False when it was already gone."""
    with db.writer(context) as session:
        result = session.execute(sa.delete(models.VolumeRequest).where(
            models.VolumeRequest.uuid == request_uuid))
        return result.rowcount > 0


def _swap(db, context, request_uuid, host, *conditions) -> VolumeRequest | None:
    """Claim the row for ``host`` where ``conditions`` still hold; None if they did not."""
    model = models.VolumeRequest
    with db.writer(context) as session:
        result = session.execute(
            sa.update(model).where(model.uuid == request_uuid, *conditions)
            .values(claimed_by=host, claimed_at=base.utcnow(), attempts=model.attempts + 1)
            .execution_options(synchronize_session=False))
        if result.rowcount != 1:
            return None
        row = session.scalars(sa.select(model).where(model.uuid == request_uuid)).one()
        return VolumeRequest.from_model(row)


def claim(db, context, request_uuid, host) -> VolumeRequest | None:
    """Take an unclaimed request for ``host`` (the cast arrived).

    None: another conductor runs it already, or it was settled and deleted
    (a duplicate delivery, or a cast that arrived after its recovery).
    """
    return _swap(db, context, request_uuid, host, models.VolumeRequest.claimed_by.is_(None))


def reclaim(db, context, request: VolumeRequest, host) -> VolumeRequest | None:
    """Take ``request`` over for ``host`` if nobody claimed it since it was read.

    The compare is on the claim as read (claimer, time, attempts): of two
    conductors recovering the same row, one wins.
    """
    model = models.VolumeRequest
    by = (model.claimed_by.is_(None) if request.claimed_by is None
          else model.claimed_by == request.claimed_by)
    at = (model.claimed_at.is_(None) if request.claimed_at is None
          else model.claimed_at == request.claimed_at)
    return _swap(db, context, request.uuid, host, by, at, model.attempts == request.attempts)


def claimers(db, context) -> set[str]:
    """The hosts that hold a claim on some request."""
    model = models.VolumeRequest
    with db.reader(context) as session:
        return set(session.scalars(sa.select(model.claimed_by).where(
            model.claimed_by.is_not(None)).distinct()))


def list_recoverable(db, context, *, grace, dead_hosts=(), host=None, started_at=None,
                     limit=100) -> list[VolumeRequest]:
    """Requests owed to nobody alive, oldest first.

    * unclaimed and older than ``grace`` seconds (the cast was lost, or the
      API died between its insert and its cast);
    * claimed by one of ``dead_hosts`` (conductors whose service is down);
    * claimed by ``host`` before ``started_at``: this host's previous
      process, which died with them in flight.
    """
    model = models.VolumeRequest
    now = base.utcnow()
    owed = [sa.and_(model.claimed_by.is_(None),
                    model.created_at < now - datetime.timedelta(seconds=grace))]
    if dead_hosts:
        owed.append(model.claimed_by.in_(sorted(dead_hosts)))
    if host is not None and started_at is not None:
        owed.append(sa.and_(model.claimed_by == host, model.claimed_at < started_at))
    statement = (sa.select(model).where(sa.or_(*owed))
                 .order_by(model.created_at, model.id).limit(limit))
    with db.reader(context) as session:
        return [VolumeRequest.from_model(row) for row in session.scalars(statement)]
