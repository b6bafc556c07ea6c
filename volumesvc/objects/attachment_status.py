"""The status and last fault of a volume attachment (API 2.106).

Why a module of its own: the status is written by three services (the API
on detach, the conductor when its attach task fails, the compute as the disk
reaches the guest or fails to), and the rules about it (what a NULL means,
when a failure stops being shown, what a "forget" does) must be the same
everywhere. The values live on the BDM row (``attach_status``, ``fault_*``).

A failed attach keeps its BDM *soft deleted* with ``attach_status = error``:
being deleted it never blocks a new attach of the volume, holds no Cinder
attachment and is invisible to every reader that predates 2.106; the API
shows it until ``[api] failed_attachment_ttl`` has passed or the client
deletes it (which clears the status: the row stays an ordinary deleted BDM).
"""

import datetime
import uuid as uuidlib

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base
from volumesvc.objects import block_device as bdm_obj
from volumesvc.states import attach_states as states

# Everything a transition writes (to put a BDM back as it was).
STATUS_FIELDS = ("attach_status", "fault_code", "fault_message", "fault_at")


def fault_body(bdm) -> dict | None:
    """The API's ``fault`` object, or None when the BDM has no fault recorded."""
    if getattr(bdm, "fault_code", None) is None:
        return None
    created = bdm.fault_at
    text = created.replace(tzinfo=None).isoformat(timespec="seconds") + "Z" if created else None
    return {"code": bdm.fault_code, "message": bdm.fault_message or "", "created": text}


def _failed_select(instance_uuid, ttl: int):
    model = models.BlockDeviceMapping
    oldest = base.utcnow() - datetime.timedelta(seconds=ttl)
    return (sa.select(model)
            .where(model.instance_uuid == instance_uuid, model.deleted != 0,
                   model.attach_status == states.ERROR, model.fault_at >= oldest)
            .order_by(model.fault_at.desc(), model.id.desc()))


def list_failed(db, context, instance_uuid, ttl: int) -> list:
    """Failed attaches of the instance younger than ``ttl`` seconds, newest per volume."""
    if ttl <= 0:
        return []
    seen, out = set(), []
    with db.reader(context) as session:
        for row in session.scalars(_failed_select(instance_uuid, ttl)):
            if row.volume_id in seen:
                continue
            seen.add(row.volume_id)
            out.append(bdm_obj.BlockDeviceMapping.from_model(row))
    return out


def get_failed(db, context, instance_uuid, volume_id, ttl: int):
    """The newest shown failure of ``volume_id`` on the instance, or None."""
    for bdm in list_failed(db, context, instance_uuid, ttl):
        if bdm.volume_id == volume_id:
            return bdm
    return None


def forget_failed(db, context, instance_uuid, volume_id) -> int:
    """Clear every shown failure of the volume on the instance (DELETE at 2.106)."""
    model = models.BlockDeviceMapping
    statement = (sa.update(model)
                 .where(model.instance_uuid == instance_uuid, model.volume_id == volume_id,
                        model.deleted != 0, model.attach_status == states.ERROR)
                 .values(attach_status=None))
    with db.writer(context) as session:
        return session.execute(statement).rowcount or 0


def save_if(db, context, bdm_uuid, values: dict, expected_status):
    """Save the status in ``values`` only while the live BDM's status is ``expected_status``.

    Why: the compute reports ``attached`` after Cinder completed the
    attachment, and by then the API may already have accepted a detach
    (``detaching``); that later write must not hide the detach. The other
    values (the connection information the compute reports with
    ``attached``) are saved in the same write whatever the status: the
    accepted detach needs them to take the disk out of the guest. Returns
    the BDM as it is after the attempt; a BDM that is gone raises
    ``BDMNotFound`` when there was more than the status to save.
    """
    model = models.BlockDeviceMapping
    values = bdm_obj.stamp_fault(values)
    bdm_obj.check_values(values)
    guarded = [(key, value) for key, value in values.items() if key in STATUS_FIELDS]
    always = [(key, value) for key, value in values.items() if key not in STATUS_FIELDS]
    live = (model.uuid == bdm_uuid, model.deleted == 0)
    if not always:
        statement = (sa.update(model).where(*live, model.attach_status == expected_status)
                     .values(**values))
    else:
        # NOTE: attach_status is assigned last: MySQL evaluates the SET list
        # from left to right, each CASE must still see the status as it was.
        expected = model.attach_status == expected_status
        guarded.sort(key=lambda item: item[0] == "attach_status")
        assignments = always + [
            (key, sa.case((expected, sa.null() if value is None else sa.literal(value)),
                          else_=getattr(model, key)))
            for key, value in guarded]
        statement = sa.update(model).where(*live).ordered_values(
            *[(getattr(model, key), value) for key, value in assignments])
    with db.writer(context) as session:
        row = bdm_obj.update_returning(session, statement)
        if row is NotImplemented:
            matched = session.execute(statement).rowcount
            if always and not matched:
                raise exception.BDMNotFound(id=bdm_uuid)
        elif row is not None:
            return bdm_obj.BlockDeviceMapping.from_model(row)
        elif always:
            raise exception.BDMNotFound(id=bdm_uuid)
    # Nothing matched (or no RETURNING): the BDM as it is, read on its own.
    return bdm_obj.get_by_uuid(db, context, bdm_uuid, read_deleted="yes")


def record_failed_attach(db, context, *, instance_uuid, volume_id, bdm_uuid, code,
                         message) -> None:
    """Keep a failed attach as a soft-deleted ``error`` BDM.

    ``bdm_uuid``: the BDM the attach had reserved (it is marked and deleted);
    None when the attach failed before a device was reserved, then a record
    with no device is made so the client still learns why.
    """
    values = states.fault_values(states.ERROR, code, message)
    if bdm_uuid is not None:
        try:
            bdm_obj.destroy(db, context, bdm_uuid, values=values)
        except exception.NotFound:
            pass
        return
    # Inserted already deleted (one transaction): never a live BDM that would
    # block the volume or show as attached.
    with db.writer(context) as session:
        row = models.BlockDeviceMapping(
            uuid=str(uuidlib.uuid4()), instance_uuid=instance_uuid, source_type="volume",
            destination_type="volume", volume_id=volume_id, fault_at=base.utcnow(), **values)
        session.add(row)
        session.flush()
        for key, value in base.soft_delete_values(row).items():
            setattr(row, key, value)
