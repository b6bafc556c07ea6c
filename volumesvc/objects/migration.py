"""Migrations: the record of each move of a server between hosts.

A live migration's row goes ``accepted`` (the API) → ``queued`` (a conductor
took it) → ``preparing`` (the source compute makes the destination's
attachments and has the destination connect them) → ``running`` (libvirt
moves the guest) → ``post-migrating`` (the server is on the destination;
the source's side is let go) → ``completed``. It ends ``error`` when the
move failed and the server stayed where it was, ``cancelled`` when the user
aborted it. The destination's Cinder attachments are recorded here one by
one as they are made (``add_dest_attachment``), so whoever ends the move —
the source compute, or its next start after a SIGKILL — knows exactly
which to keep or delete.

An evacuation's row (``migration_type`` ``evacuation``) keeps the dead
host's connection of each volume (``source_connections``), saved by the
destination before it replaces the attachments: the old host, when it comes
back, disconnects exactly those (``compute/evacuate.py``).
"""

import dataclasses
import datetime
import uuid as uuidlib

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base
from volumesvc.states import migration_states, power_state, vm_states

# The statuses live with the other state vocabularies (the computes use them
# too); re-exported here for the database side's callers.
LIVE_MIGRATION = migration_states.LIVE_MIGRATION
EVACUATION = migration_states.EVACUATION
PRE_MIGRATING = migration_states.PRE_MIGRATING
DONE = migration_states.DONE
EVACUATION_IN_PROGRESS = migration_states.EVACUATION_IN_PROGRESS
TYPES = migration_states.TYPES
ACCEPTED = migration_states.ACCEPTED
QUEUED = migration_states.QUEUED
PREPARING = migration_states.PREPARING
RUNNING = migration_states.RUNNING
POST_MIGRATING = migration_states.POST_MIGRATING
COMPLETED = migration_states.COMPLETED
ERROR = migration_states.ERROR
FAILED = migration_states.FAILED
CANCELLED = migration_states.CANCELLED
IN_PROGRESS = migration_states.IN_PROGRESS
ABORTABLE = migration_states.ABORTABLE
ABORT = migration_states.ABORT
FORCE_COMPLETE = migration_states.FORCE_COMPLETE
MIGRATION = migration_states.MIGRATION
RESIZE = migration_states.RESIZE
COLD_TYPES = migration_states.COLD_TYPES
PRE_MIGRATING = migration_states.PRE_MIGRATING
MIGRATING = migration_states.MIGRATING
FINISHED = migration_states.FINISHED
CONFIRMED = migration_states.CONFIRMED
REVERTING = migration_states.REVERTING
REVERTED = migration_states.REVERTED
COLD_UNSETTLED = migration_states.COLD_UNSETTLED


@dataclasses.dataclass
class Migration(base.DictMixin):
    id: int | None = None
    uuid: str | None = None
    instance_uuid: str = ""
    migration_type: str = LIVE_MIGRATION
    status: str = ACCEPTED
    source_compute: str | None = None
    source_node: str | None = None
    dest_compute: str | None = None
    dest_node: str | None = None
    dest_host: str | None = None
    old_instance_type_id: int | None = None
    new_instance_type_id: int | None = None
    memory_total: int | None = None
    memory_processed: int | None = None
    memory_remaining: int | None = None
    disk_total: int | None = None
    disk_processed: int | None = None
    disk_remaining: int | None = None
    user_id: str | None = None
    project_id: str | None = None
    requested: str | None = None
    dest_attachments: dict = dataclasses.field(default_factory=dict)
    dest_connections: dict = dataclasses.field(default_factory=dict)
    old_flavor: dict | None = None
    new_flavor: dict | None = None
    source_connections: dict = dataclasses.field(default_factory=dict)
    request_options: dict = dataclasses.field(default_factory=dict)
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None

    @classmethod
    def from_model(cls, row, **extra):
        return super().from_model(row, dest_attachments=dict(row.dest_attachments or {}),
                                  dest_connections=dict(row.dest_connections or {}),
                                  source_connections=dict(row.source_connections or {}),
                                  request_options=dict(row.request_options or {}),
                                  **extra)

    @property
    def in_progress(self) -> bool:
        return self.status in IN_PROGRESS


def create(db, context, *, instance_uuid, migration_type=LIVE_MIGRATION, status=ACCEPTED,
           **values) -> Migration:
    with db.writer(context) as session:
        row = models.Migration(uuid=str(uuidlib.uuid4()), instance_uuid=instance_uuid,
                               migration_type=migration_type, status=status,
                               user_id=context.user_id, project_id=context.project_id,
                               **values)
        session.add(row)
        session.flush()
        return Migration.from_model(row)


def _row(session, migration_id, *, lock=False):
    statement = sa.select(models.Migration).where(models.Migration.id == migration_id)
    if lock:
        statement = statement.with_for_update()
    row = session.scalars(statement).first()
    if row is None:
        raise exception.MigrationNotFound(migration_id=migration_id)
    return row


def get(db, context, migration_id) -> Migration:
    with db.reader(context) as session:
        return Migration.from_model(_row(session, migration_id))


def get_for_instance(db, context, migration_id, instance_uuid) -> Migration:
    """The migration ``migration_id`` of that server (404 naming both otherwise)."""
    with db.reader(context) as session:
        row = session.scalars(sa.select(models.Migration).where(
            models.Migration.id == migration_id,
            models.Migration.instance_uuid == instance_uuid)).first()
        if row is None:
            raise exception.MigrationNotFoundForInstance(migration_id=migration_id,
                                                         instance_id=instance_uuid)
        return Migration.from_model(row)


def save(db, context, migration_id, values, *, expected_status=None) -> Migration:
    """Write ``values``; with ``expected_status`` only from one of those statuses.

    Raises ``InvalidMigrationState`` when the row left the expected
    statuses (a compare and swap under the row's lock).
    """
    with db.writer(context) as session:
        row = _row(session, migration_id, lock=True)
        if expected_status is not None and row.status not in expected_status:
            raise exception.InvalidMigrationState(
                migration_id=migration_id, instance_uuid=row.instance_uuid,
                state=row.status, method=f"set it {values.get('status', 'changed')}")
        for key, value in values.items():
            setattr(row, key, value)
        row.updated_at = base.utcnow()
        session.flush()
        return Migration.from_model(row)


def add_dest_attachment(db, context, migration_id, volume_id, attachment_id) -> Migration:
    """Record one destination attachment (None forgets the volume's)."""
    with db.writer(context) as session:
        row = _row(session, migration_id, lock=True)
        attachments = dict(row.dest_attachments or {})
        if attachment_id is None:
            attachments.pop(volume_id, None)
        else:
            attachments[volume_id] = attachment_id
        row.dest_attachments = attachments
        row.updated_at = base.utcnow()
        session.flush()
        return Migration.from_model(row)


def list_for_instance(db, context, instance_uuid) -> list[Migration]:
    with db.reader(context) as session:
        rows = session.scalars(sa.select(models.Migration).where(
            models.Migration.instance_uuid == instance_uuid).order_by(models.Migration.id))
        return [Migration.from_model(row) for row in rows]


def switch_host(db, context, migration_id, bdms) -> Migration:
    """The live-migrated server is on the destination: say so everywhere at once.

    One transaction: the server's host and node become the migration's
    destination and its ``migrating`` task ends, each BDM named in ``bdms``
    (uuid → ``{"attachment_id", "connection_info"}``) takes the destination's
    attachment and connection, and the migration is ``post-migrating``. A
    reader never sees the server on one host with the other's attachments.
    Raises ``InvalidMigrationState`` unless the migration is ``running``.
    """
    # Imported here: instance and block_device import nothing of this module,
    # and this is the one function that writes them together.
    from volumesvc.objects import block_device as bdm_obj
    from volumesvc.objects import instance as instance_obj
    from volumesvc.states import task_states

    with db.writer(context):
        migration = save(db, context, migration_id, {"status": POST_MIGRATING},
                         expected_status=[RUNNING])
        instance_obj.save(db, context, migration.instance_uuid, {
            "host": migration.dest_compute, "node": migration.dest_node,
            "task_state": None}, expected_task_state=[task_states.MIGRATING])
        for bdm_uuid, values in bdms.items():
            bdm_obj.save(db, context, bdm_uuid, {
                "attachment_id": values["attachment_id"],
                "connection_info": values["connection_info"]})
        return migration


def list_in_progress(db, context, *, instance_uuid=None, source_compute=None,
                     statuses=IN_PROGRESS) -> list[Migration]:
    """Live migrations in ``statuses``, of one server or from one host, oldest first."""
    model = models.Migration
    statement = sa.select(model).where(model.migration_type == LIVE_MIGRATION,
                                       model.status.in_(statuses)).order_by(model.id)
    if instance_uuid is not None:
        statement = statement.where(model.instance_uuid == instance_uuid)
    if source_compute is not None:
        statement = statement.where(model.source_compute == source_compute)
    with db.reader(context) as session:
        return [Migration.from_model(row) for row in session.scalars(statement)]


def list_evacuations(db, context, *, statuses, instance_uuid=None, source_compute=None,
                     dest_compute=None) -> list[Migration]:
    """Evacuations in ``statuses``, of one server, from one host or to one host, oldest first."""
    model = models.Migration
    statement = sa.select(model).where(model.migration_type == EVACUATION,
                                       model.status.in_(statuses)).order_by(model.id)
    for column, value in ((model.instance_uuid, instance_uuid),
                          (model.source_compute, source_compute),
                          (model.dest_compute, dest_compute)):
        if value is not None:
            statement = statement.where(column == value)
    with db.reader(context) as session:
        return [Migration.from_model(row) for row in session.scalars(statement)]


def finish_evacuation(db, context, migration_id, values) -> Migration:
    """The evacuated server runs on the destination: say so in one transaction.

    The server's host and node become the migration's destination, its
    ``rebuilding`` task ends and ``values`` (its vm_state and power_state)
    are saved; the migration is ``done``, which is what the old host looks
    for when it comes back. Raises ``InvalidMigrationState`` unless the
    migration is ``running`` (a restart of the destination ended it).
    """
    from volumesvc.objects import instance as instance_obj
    from volumesvc.states import task_states

    with db.writer(context):
        migration = save(db, context, migration_id, {"status": DONE},
                         expected_status=[migration_states.RUNNING])
        instance_obj.save(db, context, migration.instance_uuid, dict(
            values, host=migration.dest_compute, node=migration.dest_node,
            task_state=None), expected_task_state=[task_states.REBUILDING])
        return migration


def unstarted_before(db, context, cutoff, *, migration_types=(LIVE_MIGRATION,),
                     statuses=(ACCEPTED, QUEUED), created=False) -> list[Migration]:
    """Migrations of ``migration_types`` still in ``statuses`` with no change since
    ``cutoff`` (``created``: made before it, whatever changed since): by default
    the live migrations no source took (``accepted``/``queued``); cold moves no
    source took are still ``pre-migrating``."""
    model = models.Migration
    changed = model.created_at if created else sa.func.coalesce(model.updated_at,
                                                                 model.created_at)
    with db.reader(context) as session:
        rows = session.scalars(sa.select(model).where(
            model.migration_type.in_(migration_types), model.status.in_(statuses),
            changed < cutoff).order_by(model.id))
        return [Migration.from_model(row) for row in rows]


def settle(db, context, migration_id, *, expected_status, status, instance_values,
           expected_task_state, expected_vm_state=None) -> Migration:
    """One step of a cold move: the migration's status and the server's record together.

    One transaction, each write a compare and swap: the migration must be
    in ``expected_status`` (``InvalidMigrationState`` otherwise) and the
    server in ``expected_task_state`` (``UnexpectedTaskStateError``), and in
    ``expected_vm_state`` when given (``InstanceInvalidState``). A reader never
    sees a server on one host with the other host's flavor, nor a
    ``finished`` resize whose server is not yet ``RESIZED``.
    """
    # Imported here: instance imports nothing of this module, and the
    # settling functions are the ones that write both.
    from volumesvc.objects import instance as instance_obj

    with db.writer(context):
        migration = save(db, context, migration_id, {"status": status},
                         expected_status=expected_status)
        if expected_vm_state is not None:
            current = instance_obj.get_by_uuid(db, context, migration.instance_uuid)
            if current.vm_state not in expected_vm_state:
                raise exception.InstanceInvalidState(
                    instance_uuid=current.uuid, attr="vm_state", state=current.vm_state,
                    method=f"set the migration {status}")
        instance_obj.save(db, context, migration.instance_uuid, instance_values,
                          expected_task_state=expected_task_state)
        return migration


def list_cold(db, context, *, instance_uuid=None, source_compute=None, dest_compute=None,
              statuses=COLD_UNSETTLED) -> list[Migration]:
    """Cold migrations and resizes in ``statuses`` of one server or from or to one host,
    oldest first."""
    model = models.Migration
    statement = sa.select(model).where(model.migration_type.in_(COLD_TYPES),
                                       model.status.in_(statuses)).order_by(model.id)
    if instance_uuid is not None:
        statement = statement.where(model.instance_uuid == instance_uuid)
    if source_compute is not None:
        statement = statement.where(model.source_compute == source_compute)
    if dest_compute is not None:
        statement = statement.where(model.dest_compute == dest_compute)
    with db.reader(context) as session:
        return [Migration.from_model(row) for row in session.scalars(statement)]


def latest_cold(db, context, instance_uuid, statuses) -> Migration | None:
    """The server's newest cold migration or resize in ``statuses`` (None: none is)."""
    model = models.Migration
    with db.reader(context) as session:
        row = session.scalars(sa.select(model).where(
            model.instance_uuid == instance_uuid, model.migration_type.in_(COLD_TYPES),
            model.status.in_(statuses)).order_by(model.id.desc())).first()
        return Migration.from_model(row) if row is not None else None


def finished_before(db, context, cutoff) -> list[Migration]:
    """Cold moves ``finished`` (awaiting a confirm) with no change since ``cutoff``."""
    model = models.Migration
    changed = sa.func.coalesce(model.updated_at, model.created_at)
    with db.reader(context) as session:
        rows = session.scalars(sa.select(model).where(
            model.migration_type.in_(COLD_TYPES), model.status == FINISHED,
            changed < cutoff).order_by(model.id))
        return [Migration.from_model(row) for row in rows]


def confirm(db, context, migration_id) -> Migration:
    """Confirm a ``finished`` cold move: ``confirmed``, the server ``ACTIVE`` (or
    ``STOPPED`` when its guest is off) with no task, in one transaction.

    Raises ``InvalidMigrationState`` when it is no longer ``finished`` (a
    revert or another confirm came first).
    """
    from volumesvc.objects import instance as instance_obj

    migration = get(db, context, migration_id)
    current = instance_obj.get_by_uuid(db, context, migration.instance_uuid)
    running = current.power_state == power_state.RUNNING
    return settle(db, context, migration_id, expected_status=[FINISHED], status=CONFIRMED,
                  instance_values={"vm_state": vm_states.ACTIVE if running
                                   else vm_states.STOPPED, "task_state": None},
                  expected_task_state=[None], expected_vm_state=[vm_states.RESIZED])
