"""Service records: one row per (host, binary), kept fresh by heartbeats.

The API reads them for ``os-services`` and for the minimum compute version
that gates new features; computes write them only through the conductor.
"""

import dataclasses
import datetime
import uuid as uuidlib

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_log import log as logging

from volumesvc import binaries, exception, servicegroup
from volumesvc import version as vs_version
from volumesvc.db import models
from volumesvc.objects import base

LOG = logging.getLogger(__name__)

# Fields an operator may change through the API (os-services PUT).
UPDATABLE = frozenset({"disabled", "disabled_reason", "forced_down"})


@dataclasses.dataclass
class Service(base.DictMixin):
    id: int | None = None
    uuid: str | None = None
    # NOT NULL columns: every Service comes from a row.
    host: str = ""
    binary: str = ""
    topic: str | None = None
    report_count: int = 0
    disabled: bool = False
    disabled_reason: str | None = None
    forced_down: bool = False
    version: int = 0
    capabilities: dict = dataclasses.field(default_factory=dict)
    availability_zone: str = "nova"
    last_seen_up: datetime.datetime | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    deleted: bool = False

    @classmethod
    def from_model(cls, row, **extra):
        return super().from_model(row, capabilities=dict(row.capabilities or {}),
                                  deleted=bool(row.deleted), **extra)


def _live(session, **filters):
    statement = sa.select(models.Service).where(models.Service.deleted == 0)
    for key, value in filters.items():
        statement = statement.where(getattr(models.Service, key) == value)
    return session.scalars(statement).first()


def heartbeat(db, context, *, host, binary, topic, version, capabilities=None) -> Service:
    """Create or refresh the live row of (host, binary) and return it.

    NOTE: two processes starting at once may both miss the row and insert;
    the unique (host, binary, deleted) constraint rejects one, which then
    retries and takes the update path.
    """
    for attempt in range(2):
        try:
            return _heartbeat(db, context, host=host, binary=binary, topic=topic,
                              version=version, capabilities=capabilities)
        except db_exc.DBDuplicateEntry:
            if attempt:
                raise
    raise AssertionError("unreachable")


def _heartbeat(db, context, *, host, binary, topic, version, capabilities):
    now = base.utcnow()
    with db.writer(context) as session:
        row = _live(session, host=host, binary=binary)
        if row is None:
            row = models.Service(uuid=str(uuidlib.uuid4()), host=host, binary=binary,
                                 topic=topic, report_count=0, disabled=False,
                                 forced_down=False, availability_zone="nova")
            session.add(row)
        row.report_count = (row.report_count or 0) + 1
        row.last_seen_up = now
        row.topic = topic
        row.version = version
        if capabilities is not None:
            row.capabilities = capabilities
            if capabilities.get(servicegroup.ZONE_CAPABILITY):
                row.availability_zone = capabilities[servicegroup.ZONE_CAPABILITY]
        session.flush()
        return Service.from_model(row)


def list_services(db, context, *, binary=None, host=None, read_deleted=None) -> list[Service]:
    mode = base.read_deleted(context, read_deleted)
    statement = base.filter_deleted(sa.select(models.Service), models.Service, mode)
    if binary is not None:
        statement = statement.where(models.Service.binary == binary)
    if host is not None:
        statement = statement.where(models.Service.host == host)
    statement = statement.order_by(models.Service.id)
    with db.reader(context) as session:
        return [Service.from_model(row) for row in session.scalars(statement)]


def get_by_uuid(db, context, service_uuid) -> Service:
    with db.reader(context) as session:
        row = _live(session, uuid=service_uuid)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_uuid)
        return Service.from_model(row)


# The id column is a 32-bit INTEGER on PostgreSQL and MySQL: anything outside
# cannot exist, and would be a driver error (a 500) rather than a miss.
_MAX_ID = 2 ** 31 - 1


def get_by_id(db, context, service_id) -> Service:
    if not 0 < int(service_id) <= _MAX_ID:
        raise exception.ServiceNotFound(service_id=service_id)
    with db.reader(context) as session:
        row = _live(session, id=service_id)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_id)
        return Service.from_model(row)


def get_by_host_and_binary(db, context, host, binary) -> Service:
    with db.reader(context) as session:
        row = _live(session, host=host, binary=binary)
        if row is None:
            raise exception.HostBinaryNotFound(host=host, binary=binary)
        return Service.from_model(row)


def update(db, context, service_uuid, **values) -> Service:
    """Change the operator-controlled fields (see ``UPDATABLE``)."""
    unknown = set(values) - UPDATABLE
    if unknown:
        raise exception.Invalid(reason=f"cannot update service fields {sorted(unknown)}")
    with db.writer(context) as session:
        row = _live(session, uuid=service_uuid)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_uuid)
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return Service.from_model(row)


def destroy(db, context, service_uuid) -> None:
    """Soft delete: the host can register again and the history stays."""
    with db.writer(context) as session:
        row = _live(session, uuid=service_uuid)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_uuid)
        for key, value in base.soft_delete_values(row).items():
            setattr(row, key, value)


def compute_rpc_version_cap(conf, db, context):
    """What ``[upgrade_levels] compute = auto`` means now: the oldest compute's RPC version.

    Read once by whoever makes a compute RPC client (``auto_version_cap``):
    a service restarted after the last old compute is upgraded sends the
    newest version, as Nova's ``auto`` does. None (send the newest) when the
    option is not ``auto`` or no compute has reported a version yet; a
    compute newer than this code counts as this code's version.
    """
    if conf.upgrade_levels.compute != "auto":
        return None
    minimum = get_minimum_version(db, context, binaries.COMPUTE)
    history = vs_version.SERVICE_VERSION_HISTORY
    cap = history[min(minimum, len(history)) - 1]["compute_rpc"] if minimum else None
    LOG.info("[upgrade_levels] compute = auto: %s",
             f"sending compute RPC {cap}" if cap else "no compute has reported a version yet")
    return cap


def get_minimum_version(db, context, binary) -> int:
    """Lowest version among live services of ``binary``; 0 when there are none.

    Rows that never reported a version (0 or NULL) are ignored, as Nova does,
    so a half-registered service does not hold every feature back.
    """
    statement = (sa.select(sa.func.min(models.Service.version))
                 .where(models.Service.binary == binary,
                        models.Service.deleted == 0,
                        models.Service.version > 0))
    with db.reader(context) as session:
        return int(session.scalar(statement) or 0)
