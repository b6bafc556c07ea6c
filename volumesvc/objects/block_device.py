"""Block device mappings: how each disk of an instance is sourced and attached.

Volume BDMs carry the Cinder ``attachment_id`` and ``connection_info`` the
attach workflow needs; rows are only ever soft deleted so a failed detach can
still be cleaned up from the record.
"""

import dataclasses
import datetime
import uuid as uuidlib

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base

_READ_ONLY = frozenset({"id", "created_at", "updated_at", "deleted", "deleted_at"})


@dataclasses.dataclass
class BlockDeviceMapping(base.DictMixin):
    id: int | None = None
    uuid: str | None = None
    instance_uuid: str | None = None
    source_type: str | None = None
    destination_type: str | None = None
    boot_index: int | None = None
    device_name: str | None = None
    device_type: str | None = None
    disk_bus: str | None = None
    guest_format: str | None = None
    volume_id: str | None = None
    snapshot_id: str | None = None
    image_id: str | None = None
    volume_size: int | None = None
    volume_type: str | None = None
    attachment_id: str | None = None
    # NOTE: kept as the JSON string Nova stores; only the attach/detach code
    # that owns its shape decodes it.
    connection_info: str | None = None
    delete_on_termination: bool = False
    no_device: bool = False
    tag: str | None = None
    attach_status: str | None = None
    fault_code: int | None = None
    fault_message: str | None = None
    fault_at: datetime.datetime | None = None
    read_only: bool = False
    requested_device: str | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    deleted_at: datetime.datetime | None = None
    deleted: bool = False

    @property
    def is_volume(self) -> bool:
        return self.destination_type == "volume"

    @classmethod
    def from_model(cls, row, **extra):
        return super().from_model(row, deleted=bool(row.deleted), **extra)


def has_local_root(bdms) -> bool:
    """The server's root disk is a file on its host (image → local, boot index 0),
    not a Cinder volume: what no move between hosts can take along."""
    return any(b.destination_type == "local" and b.boot_index == 0 for b in bdms)


def _check_values(values):
    bad = (set(values) & _READ_ONLY) | {
        key for key in values if key not in BlockDeviceMapping.__dataclass_fields__}
    if bad:
        raise exception.Invalid(reason=f"cannot set block device mapping fields {sorted(bad)}")


def check_values(values):
    """Refuse read-only or unknown fields (for writers outside this module)."""
    _check_values(values)


def stamp_fault(values: dict) -> dict:
    """``fault_at`` follows ``fault_code`` (API 2.106): now when set, None when cleared.

    Stamped where the row is written so no clock crosses the message bus.
    """
    if "fault_code" in values and "fault_at" not in values:
        values = dict(values, fault_at=base.utcnow() if values["fault_code"] is not None
                      else None)
    return values


def _select(context, read_deleted=None):
    model = models.BlockDeviceMapping
    mode = base.read_deleted(context, read_deleted)
    return base.filter_deleted(sa.select(model), model, mode).order_by(model.id)


def create(db, context, values: dict) -> BlockDeviceMapping:
    values = stamp_fault(dict(values))
    _check_values(values)
    values.setdefault("uuid", str(uuidlib.uuid4()))
    with db.writer(context) as session:
        row = models.BlockDeviceMapping(**values)
        session.add(row)
        session.flush()
        return BlockDeviceMapping.from_model(row)


def create_for_attach(db, context, values: dict, *, device_name_for,
                      max_volumes: int) -> BlockDeviceMapping:
    """Insert the BDM of a volume being attached, naming its device, in one transaction.

    Why one transaction under the instance row's lock (``FOR UPDATE``;
    SQLite's writer transaction is exclusive already): the device name is
    the next one free among the server's live BDMs, so two attaches to one
    server at once would otherwise both take it. The same lock makes the
    refusals exact: the volume already on the server
    (``VolumeAlreadyAttached``) and ``max_volumes`` volume BDMs reached
    (``TooManyDiskDevices``; negative: no limit).

    ``device_name_for(used_names)`` picks the name (the virt layer's rule,
    ``virt/block_device.py``); the row is written once, complete.
    """
    values = stamp_fault(dict(values))
    _check_values(values)
    values.setdefault("uuid", str(uuidlib.uuid4()))
    instance_uuid, volume_id = values["instance_uuid"], values["volume_id"]
    model = models.BlockDeviceMapping
    with db.writer(context) as session:
        base.lock_live_instance(session, instance_uuid)
        live = session.execute(sa.select(model.volume_id, model.device_name,
                                         model.destination_type).where(
            model.instance_uuid == instance_uuid, model.deleted == 0)).all()
        if any(row.volume_id == volume_id for row in live):
            raise exception.VolumeAlreadyAttached(volume_id=volume_id,
                                                  instance_uuids=instance_uuid)
        volumes = sum(1 for row in live if row.destination_type == "volume")
        if 0 <= max_volumes <= volumes:
            raise exception.TooManyDiskDevices(maximum=max_volumes)
        values["device_name"] = device_name_for(
            [row.device_name for row in live if row.device_name])
        row = model(**values)
        session.add(row)
        session.flush()
        return BlockDeviceMapping.from_model(row)


def get_by_uuid(db, context, bdm_uuid, read_deleted=None) -> BlockDeviceMapping:
    statement = _select(context, read_deleted).where(models.BlockDeviceMapping.uuid == bdm_uuid)
    with db.reader(context) as session:
        row = session.scalars(statement).first()
        if row is None:
            raise exception.BDMNotFound(id=bdm_uuid)
        return BlockDeviceMapping.from_model(row)


def list_by_instance(db, context, instance_uuid, read_deleted=None) -> list[BlockDeviceMapping]:
    statement = _select(context, read_deleted).where(
        models.BlockDeviceMapping.instance_uuid == instance_uuid)
    with db.reader(context) as session:
        return [BlockDeviceMapping.from_model(row) for row in session.scalars(statement)]


def list_by_instances(db, context, instance_uuids) -> dict[str, list[BlockDeviceMapping]]:
    """Live BDMs of many instances in one query: {instance uuid: [bdm, ...]}."""
    statement = _select(context, "no").where(
        models.BlockDeviceMapping.instance_uuid.in_(list(instance_uuids)))
    found: dict[str, list[BlockDeviceMapping]] = {uuid: [] for uuid in instance_uuids}
    with db.reader(context) as session:
        for row in session.scalars(statement):
            found[row.instance_uuid].append(BlockDeviceMapping.from_model(row))
    return found


def list_by_volume(db, context, volume_id, read_deleted=None) -> list[BlockDeviceMapping]:
    """All live BDMs of a volume: more than one when it is multiattached."""
    statement = _select(context, read_deleted).where(
        models.BlockDeviceMapping.volume_id == volume_id)
    with db.reader(context) as session:
        return [BlockDeviceMapping.from_model(row) for row in session.scalars(statement)]


def get_by_volume_and_instance(db, context, volume_id, instance_uuid) -> BlockDeviceMapping:
    model = models.BlockDeviceMapping
    statement = _select(context, "no").where(
        model.volume_id == volume_id, model.instance_uuid == instance_uuid)
    with db.reader(context) as session:
        row = session.scalars(statement).first()
        if row is None:
            raise exception.VolumeBDMNotFound(volume_id=volume_id)
        return BlockDeviceMapping.from_model(row)


def update_returning(session, statement):
    """Run ORM ``UPDATE`` ``statement`` and return the first updated row, or None.

    Why: a save is on every step of an attach (conductor and compute), and
    where the backend can say ``UPDATE ... RETURNING`` (PostgreSQL, SQLite)
    that is one round trip instead of a SELECT, an UPDATE and a refresh.
    Elsewhere (MySQL/MariaDB) it returns ``NotImplemented``: callers then
    take their select-then-update path.
    """
    if not session.bind.dialect.update_returning:
        return NotImplemented
    statement = statement.returning(models.BlockDeviceMapping).execution_options(
        synchronize_session=False)
    return session.scalars(statement).first()


def save(db, context, bdm_uuid, values: dict) -> BlockDeviceMapping:
    values = stamp_fault(values)
    _check_values(values)
    model = models.BlockDeviceMapping
    with db.writer(context) as session:
        if values:
            row = update_returning(session, sa.update(model).where(
                model.uuid == bdm_uuid, model.deleted == 0).values(**values))
            if row is None:
                raise exception.BDMNotFound(id=bdm_uuid)
            if row is not NotImplemented:
                return BlockDeviceMapping.from_model(row)
        row = session.scalars(_select(context, "no").where(model.uuid == bdm_uuid)).first()
        if row is None:
            raise exception.BDMNotFound(id=bdm_uuid)
        for key, value in values.items():
            setattr(row, key, value)
        session.flush()
        return BlockDeviceMapping.from_model(row)


def destroy(db, context, bdm_uuid, values: dict | None = None) -> None:
    """Soft delete (``deleted`` = id): the record survives for audits and cleanup.

    ``values`` are saved in the same write (a failed attach's ``error``
    status, API 2.106), so no reader sees them on a live BDM.
    """
    values = stamp_fault(values or {})
    _check_values(values)
    model = models.BlockDeviceMapping
    with db.writer(context) as session:
        row = session.scalars(_select(context, "no").where(model.uuid == bdm_uuid)).first()
        if row is None:
            raise exception.BDMNotFound(id=bdm_uuid)
        for key, value in {**values, **base.soft_delete_values(row)}.items():
            setattr(row, key, value)
