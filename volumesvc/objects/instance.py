"""Instances and the compare-and-swap on ``task_state`` that serializes their work.

The DB layer stays policy-neutral: callers pass explicit filters (the API
adds the project of a non-admin user), nothing here looks at roles.
"""

import dataclasses
import datetime
import uuid as uuidlib

import sqlalchemy as sa

from volumesvc import binaries, exception
from volumesvc.db import api as db_api
from volumesvc.db import models
from volumesvc.objects import base, instance_filters
from volumesvc.objects import tag as tag_obj
from volumesvc.states import migration_states

UNSET = base.UNSET


@dataclasses.dataclass
class Instance(base.DictMixin):
    _MODEL_ATTRS = {"metadata": "metadata_"}

    id: int | None = None
    uuid: str | None = None
    project_id: str | None = None
    user_id: str | None = None
    display_name: str | None = None
    display_description: str | None = None
    hostname: str | None = None
    host: str | None = None
    node: str | None = None
    availability_zone: str | None = None
    vm_state: str | None = None
    task_state: str | None = None
    power_state: int | None = None
    flavor_id: int | None = None
    flavor: dict | None = None
    image_ref: str | None = None
    image_properties: dict | None = None
    root_device_name: str | None = None
    launched_at: datetime.datetime | None = None
    terminated_at: datetime.datetime | None = None
    locked: bool = False
    locked_by: str | None = None
    locked_reason: str | None = None
    key_name: str | None = None
    key_data: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)
    config_drive: str | None = None
    reservation_id: str | None = None
    launch_index: int | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    user_data: str | None = None
    tags: list = dataclasses.field(default_factory=list)
    progress: int | None = None
    instance_name: str | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    deleted_at: datetime.datetime | None = None
    deleted: bool = False

    @classmethod
    def from_model(cls, row, **extra):
        """``tags`` come from the tags table (pass them)."""
        extra.setdefault("tags", [])
        return super().from_model(row, metadata=dict(row.metadata_ or {}),
                                  deleted=bool(row.deleted), **extra)


def _with_tags(session, rows) -> list[Instance]:
    tags = tag_obj.tags_by_instance(session, [row.uuid for row in rows])
    return [Instance.from_model(row, tags=tags[row.uuid]) for row in rows]


# Columns a caller may not set through create() / save().
_READ_ONLY = frozenset({"id", "created_at", "updated_at", "deleted", "deleted_at"})


def _check_values(values):
    bad = (set(values) & _READ_ONLY) | {
        key for key in values if key not in Instance.__dataclass_fields__}
    if bad:
        raise exception.Invalid(reason=f"cannot set instance fields {sorted(bad)}")


def _get_row(session, context, instance_uuid, read_deleted=None):
    mode = base.read_deleted(context, read_deleted)
    statement = sa.select(models.Instance).where(models.Instance.uuid == instance_uuid)
    row = session.scalars(base.filter_deleted(statement, models.Instance, mode)).first()
    if row is None:
        raise exception.InstanceNotFound(instance_id=instance_uuid)
    return row


def create(db, context, values: dict, name_template: str = "instance-%08x") -> Instance:
    """Insert an instance; ``uuid`` and ``instance_name`` are generated if absent.

    ``name_template`` is ``[DEFAULT] instance_name_template``: formatted with
    the new row's id, or with ``id`` and ``uuid`` when it names keys.
    """
    values = dict(values)
    _check_values(values)
    values.setdefault("uuid", str(uuidlib.uuid4()))
    values.setdefault("metadata", {})
    tags = values.pop("tags", None) or []
    with db.writer(context) as session:
        row = models.Instance(**base.model_values(Instance, values))
        session.add(row)
        session.flush()
        if not row.instance_name:
            # NOTE: the libvirt domain name: unique per host (per libvirt
            # daemon) and stable across renames, hence the id, not the name.
            row.instance_name = instance_name(name_template, row.id, row.uuid)
        tag_obj.insert(session, row.uuid, tags)
        session.flush()
        return _with_tags(session, [row])[0]


def instance_name(template: str, row_id: int, uuid: str) -> str:
    """``template`` formatted as Nova does: with the id, else with ``id`` and ``uuid`` keys."""
    try:
        return template % row_id
    except TypeError:
        return template % {"id": row_id, "uuid": uuid}


def get_by_uuid(db, context, instance_uuid, read_deleted=None) -> Instance:
    with db.reader(context) as session:
        return _with_tags(session, [_get_row(session, context, instance_uuid, read_deleted)])[0]


def list_instances(db, context, *, project_id=None, host=None, vm_state=None, name=None,
                   uuids=None, deleted=False, limit=None, marker=None,
                   tag_filters=None, filters=None) -> list[Instance]:
    """Instances newest first (created_at desc, id desc), with marker pagination.

    ``deleted``: False for live rows only, True for deleted only, None for both.
    ``name`` is a plain substring of display_name (no regex: it must behave
    the same on every backend). ``marker`` is the uuid of the last instance
    of the previous page, looked up whether deleted or not but only within
    ``project_id`` when one is given: another project's server must look as
    unknown as a made-up uuid (MarkerNotFound), or the marker tells which
    uuids exist. ``tag_filters``: keyword arguments of
    :func:`volumesvc.objects.tag.filter_clauses` (the 2.26 list filters);
    ``filters``: an :class:`~volumesvc.objects.instance_filters.InstanceFilters`
    (the API's exact, regular-expression and time filters).
    """
    model = models.Instance
    statement = sa.select(model)
    if deleted is not None:
        statement = statement.where(model.deleted != 0 if deleted else model.deleted == 0)
    for column, value in ((model.project_id, project_id), (model.host, host)):
        if value is not None:
            statement = statement.where(column == value)
    if vm_state is not None:
        states = [vm_state] if isinstance(vm_state, str) else list(vm_state)
        statement = statement.where(model.vm_state.in_(states))
    if uuids is not None:
        statement = statement.where(model.uuid.in_(list(uuids)))
    if name:
        statement = statement.where(model.display_name.contains(name, autoescape=True))
    for clause in tag_obj.filter_clauses(model, **(tag_filters or {})):
        statement = statement.where(clause)
    for clause in instance_filters.clauses(model, filters):
        statement = statement.where(clause)
    with db.reader(context) as session:
        if marker is not None:
            marker_query = sa.select(model).where(model.uuid == marker)
            if project_id is not None:
                marker_query = marker_query.where(model.project_id == project_id)
            marker_row = session.scalars(marker_query).first()
            if marker_row is None:
                raise exception.MarkerNotFound(marker=marker)
            statement = statement.where(base.keyset_after(model, marker_row))
        statement = statement.order_by(model.created_at.desc(), model.id.desc())
        if limit is not None:
            statement = statement.limit(limit)
        rows = list(session.scalars(statement))
        instance_filters.check_pattern_warnings(session, filters)
        return _with_tags(session, rows)


def count_by_host(db, context, hosts) -> dict:
    """Live instances per host name, for every name in ``hosts`` (0 when none).

    One aggregate query: choosing a host for each build of a storm must not
    load every instance already on the candidates (that grew with N²).
    """
    hosts = list(hosts)
    counts = dict.fromkeys(hosts, 0)
    if not hosts:
        return counts
    model = models.Instance
    statement = (sa.select(model.host, sa.func.count())
                 .where(model.deleted == 0, model.host.in_(hosts))
                 .group_by(model.host))
    with db.reader(context) as session:
        for host, count in session.execute(statement):
            counts[host] = count
    return counts


def _expected_clause(expected_task_state):
    expected = (list(expected_task_state)
                if isinstance(expected_task_state, (list, tuple, set, frozenset))
                else [expected_task_state])
    # NOTE: SQL "IN (NULL)" never matches, so None needs its own IS NULL.
    clauses = []
    if None in expected:
        clauses.append(models.Instance.task_state.is_(None))
    states = [state for state in expected if state is not None]
    if states:
        clauses.append(models.Instance.task_state.in_(states))
    return sa.or_(*clauses), expected


def save(db, context, instance_uuid, values: dict, expected_task_state=UNSET) -> Instance:
    """Update a live instance; with ``expected_task_state``, only if it still matches.

    The check and the write are one ``UPDATE ... WHERE task_state IN (...)``
    statement, so of two concurrent requests (two API workers, or API and
    conductor) exactly one wins on every backend; the other gets
    UnexpectedTaskStateError and can report a 409 instead of clobbering.
    """
    values = dict(values)
    _check_values(values)
    if "tags" in values:
        raise exception.Invalid(reason="tags are written through objects/tag.py")
    values["updated_at"] = base.utcnow()
    model = models.Instance
    statement = sa.update(model).where(model.uuid == instance_uuid, model.deleted == 0)
    expected = None
    if expected_task_state is not UNSET:
        clause, expected = _expected_clause(expected_task_state)
        statement = statement.where(clause)
    statement = statement.values(**base.model_values(Instance, values)).execution_options(
        synchronize_session=False)
    with db.writer(context) as session:
        result = session.execute(statement)
        row = _get_row(session, context, instance_uuid, read_deleted="no")
        if result.rowcount == 0:
            raise exception.UnexpectedTaskStateError(
                instance_uuid=instance_uuid, expected=expected, actual=row.task_state)
        session.refresh(row)
        return _with_tags(session, [row])[0]


def update_metadata(db, context, instance_uuid, change, *, limit, check=None) -> dict:
    """Apply ``change(current) -> new`` to the metadata of a live instance; returns new.

    The read and the write are one transaction holding the instance row
    (``FOR UPDATE``; SQLite's writer lock), so two concurrent updates do not
    lose each other's keys and the ``limit`` on the number of items holds
    after both. ``check(instance)`` runs on the locked row first (state and
    lock gates) and raises to refuse.
    """
    model = models.Instance
    with db.writer(context) as session:
        row = session.scalars(sa.select(model).where(
            model.uuid == instance_uuid, model.deleted == 0).with_for_update()).first()
        if row is None:
            raise exception.InstanceNotFound(instance_id=instance_uuid)
        if check is not None:
            check(Instance.from_model(row))
        new = change(dict(row.metadata_ or {}))
        if len(new) > limit:
            raise exception.MetadataLimitExceeded(allowed=limit)
        session.execute(sa.update(model).where(model.id == row.id).values(
            metadata_=new, updated_at=base.utcnow()).execution_options(
            synchronize_session=False))
        return new


def destroy(db, context, instance_uuid, expected_task_state=UNSET) -> Instance:
    """Soft delete the instance and its block device mappings.

    NOTE: soft, like Nova: the API still shows deleted servers to admins
    and the BDM history (volume, attachment id) is kept for cleanup.
    """
    clause = expected = None
    with db.writer(context) as session:
        row = _get_row(session, context, instance_uuid, read_deleted="no")
        if expected_task_state is not UNSET:
            clause, expected = _expected_clause(expected_task_state)
            if row.task_state not in expected:
                raise exception.UnexpectedTaskStateError(
                    instance_uuid=instance_uuid, expected=expected, actual=row.task_state)
        now = base.utcnow()
        bdm = models.BlockDeviceMapping
        session.execute(
            sa.update(bdm).where(bdm.instance_uuid == instance_uuid, bdm.deleted == 0)
            .values(deleted=bdm.id, deleted_at=now).execution_options(synchronize_session=False))
        statement = sa.update(models.Instance).where(
            models.Instance.id == row.id, models.Instance.deleted == 0).values(
            deleted=row.id, deleted_at=now, terminated_at=now)
        if clause is not None:
            statement = statement.where(clause)
        if session.execute(statement.execution_options(synchronize_session=False)).rowcount != 1:
            raise exception.UnexpectedTaskStateError(
                instance_uuid=instance_uuid, expected=expected, actual=None)
        session.refresh(row)
        return _with_tags(session, [row])[0]


def flavor_totals_by_host(db, context, hosts) -> dict:
    """host → {"vcpus": N, "memory_mb": N}: the flavors of its live instances summed.

    What a host has given away, for the capacity check of the scheduler.
    Only the flavor column is read (a JSON copy per instance).
    """
    with db.reader(context) as session:
        return _flavor_totals(session, hosts)


def _flavor_totals(session, hosts, locking=False) -> dict:
    totals = {host: {"vcpus": 0, "memory_mb": 0} for host in hosts}
    if not totals:
        return totals
    model = models.Instance
    statement = sa.select(model.host, model.flavor).where(
        model.deleted == 0, model.host.in_(list(totals)))
    if locking and session.get_bind().dialect.name in ("mysql", "mariadb"):
        # NOTE: at REPEATABLE READ a plain read may see a snapshot older than
        # the lock the caller holds; a locking read sees the latest commits.
        statement = statement.with_for_update(read=True)
    for host, flavor in session.execute(statement):
        for key in ("vcpus", "memory_mb"):
            totals[host][key] += int((flavor or {}).get(key) or 0)
    for host, flavor in _held_by_cold_moves(session, totals):
        for key in ("vcpus", "memory_mb"):
            totals[host][key] += int((flavor or {}).get(key) or 0)
    return totals


# A cold move's destination before the server is there.
_BEFORE_SWITCH = (migration_states.PRE_MIGRATING, migration_states.MIGRATING,
                  migration_states.POST_MIGRATING)


def _held_by_cold_moves(session, totals):
    """(host, flavor) of the room unsettled cold moves hold on the host the server is not on.

    As Nova's allocations: until a resize is confirmed or reverted the
    server holds its old flavor on the source and its new one on the
    destination (both on one host for a resize to the same host), so
    neither can be given away meanwhile.
    """
    migration = models.Migration
    instance = models.Instance
    rows = session.execute(sa.select(
        migration.source_compute, migration.dest_compute, migration.old_flavor,
        migration.new_flavor, migration.status, instance.host).join(
        instance, instance.uuid == migration.instance_uuid).where(
        instance.deleted == 0, migration.migration_type.in_(migration_states.COLD_TYPES),
        migration.status.in_(migration_states.COLD_UNSETTLED),
        sa.or_(migration.source_compute.in_(list(totals)),
               migration.dest_compute.in_(list(totals)))))
    for source, dest, old, new, status, host in rows:
        if not dest:
            continue
        if source == dest:
            other, flavor = dest, (new if status in _BEFORE_SWITCH else old)
        elif host == source:
            other, flavor = dest, new
        else:
            other, flavor = source, old
        if other in totals:
            yield other, flavor


# MariaDB/Galera: two claims on different hosts can deadlock in InnoDB's gap
# locks on the instances' host index (each locks its host's range, then moves
# an instance into it).
@db_api.retry_on_deadlock
def claim_host(db, context, instance_uuid, host, no_room, expected_task_state):
    """Put the instance on ``host`` if it still has room; the refusal's reason otherwise.

    Why a claim: choosing a host reads what the hosts hold, and two builds
    that both read before either writes would both take the last room. Here
    the compute's service row is locked (``SELECT ... FOR UPDATE``; SQLite's
    writer lock serialises anyway), the host's servers are summed again and
    ``no_room(capabilities, used)`` decides, and the instance gets the host
    in the same transaction: the next claim on that host waits and counts
    it. Claims on different hosts do not wait for each other.

    Returns None when placed; raises UnexpectedTaskStateError when the
    instance left ``expected_task_state`` (deleted meanwhile) and
    ComputeHostNotFound when the host's record is gone.
    """
    service = models.Service
    model = models.Instance
    with db.writer(context) as session:
        row = session.scalars(sa.select(service).where(
            service.host == host, service.binary == binaries.COMPUTE,
            service.deleted == 0).with_for_update()).first()
        if row is None:
            raise exception.ComputeHostNotFound(host=host)
        reason = no_room(dict(row.capabilities or {}),
                         _flavor_totals(session, [host], locking=True)[host])
        if reason is not None:
            return reason
        clause, expected = _expected_clause(expected_task_state)
        result = session.execute(
            sa.update(model).where(model.uuid == instance_uuid, model.deleted == 0, clause)
            .values(host=host, node=host, updated_at=base.utcnow())
            .execution_options(synchronize_session=False))
        if result.rowcount == 0:
            raise exception.UnexpectedTaskStateError(
                instance_uuid=instance_uuid, expected=expected, actual=None)
        return None
