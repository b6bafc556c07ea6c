"""Shared pieces of the object modules: dict round trips and soft-delete reads.

Objects are plain dataclasses (placement dropped oslo.versionedobjects, and
so do we). They cross RPC as ``to_dict()`` output, so every value must be a
JSON primitive; datetimes travel as ISO 8601 strings.
"""

import copy
import dataclasses
import datetime
import functools
import typing

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models

utcnow = models.utcnow

# Sentinel meaning "argument not given" where None is a meaningful value
# (``expected_task_state=None`` means "only while no task is running").
UNSET: typing.Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


# Values shared safely between a row, an object and a dict: immutable, so
# copying them is pure cost (deepcopy's dispatch ran ~100 times per object,
# thousands of times per attach storm second in the conductor).
_IMMUTABLE = (str, int, float, bool, type(None), datetime.datetime)


def _copy(value):
    """``value`` itself when immutable, else a deep copy (dicts and lists are not shared)."""
    return value if isinstance(value, _IMMUTABLE) else copy.deepcopy(value)


@functools.cache
def _datetime_fields(cls) -> frozenset[str]:
    hints = typing.get_type_hints(cls)
    return frozenset(
        name for name, hint in hints.items()
        if hint is datetime.datetime or datetime.datetime in typing.get_args(hint))


class DictMixin:
    """``to_dict`` / ``from_dict`` / ``from_model`` for the dataclasses.

    ``_MODEL_ATTRS`` maps a field to a differently named model attribute
    (``metadata`` is reserved on SQLAlchemy models).
    """

    _MODEL_ATTRS: typing.ClassVar[dict[str, str]] = {}
    # Every subclass is a dataclass; this tells type checkers so.
    __dataclass_fields__: typing.ClassVar[dict[str, dataclasses.Field[typing.Any]]]

    def to_dict(self) -> dict:
        values = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, datetime.datetime):
                value = value.isoformat()
            elif isinstance(value, DictMixin):
                value = value.to_dict()
            elif isinstance(value, list) and value and isinstance(value[0], DictMixin):
                value = [item.to_dict() for item in value]
            else:
                value = _copy(value)
            values[field.name] = value
        return values

    @classmethod
    def from_dict(cls, values: dict):
        """Build from ``to_dict()`` output; unknown keys are ignored.

        NOTE: ignoring unknown keys lets a newer service send a field an
        older one does not know yet during a rolling upgrade.
        """
        # A plain ``type`` for the cache: mypy does not see class objects as Hashable.
        klass: type = cls
        datetimes = _datetime_fields(klass)
        kwargs = {}
        for field in dataclasses.fields(cls):
            if field.name not in values:
                continue
            value = values[field.name]
            if field.name in datetimes and isinstance(value, str):
                value = datetime.datetime.fromisoformat(value)
            kwargs[field.name] = cls._field_from_dict(field.name, value)
        return cls(**kwargs)

    @classmethod
    def _field_from_dict(cls, name, value):
        """Hook for nested objects (instance actions carry their events)."""
        return value

    @classmethod
    def from_model(cls, row, **extra):
        kwargs = {}
        for field in dataclasses.fields(cls):
            if field.name in extra:
                continue
            attr = cls._MODEL_ATTRS.get(field.name, field.name)
            if hasattr(row, attr):
                kwargs[field.name] = _copy(getattr(row, attr))
        kwargs.update(extra)
        return cls(**kwargs)


def model_values(obj_cls, values: dict) -> dict:
    """Translate field names to model attribute names for inserts/updates."""
    return {obj_cls._MODEL_ATTRS.get(key, key): value for key, value in values.items()}


def read_deleted(context, read_deleted: str | None) -> str:
    """The soft-delete mode: explicit argument, else the context's, else "no"."""
    if read_deleted is not None:
        mode = read_deleted
    else:
        mode = getattr(context, "read_deleted", None) or "no"
    if mode not in ("no", "yes", "only"):
        raise exception.Invalid(reason=f"read_deleted must be no/yes/only, not {mode!r}")
    return mode


def filter_deleted(statement, model, mode: str):
    """Apply Nova's read_deleted semantics to a select on a soft-delete model."""
    if mode == "no":
        return statement.where(model.deleted == 0)
    if mode == "only":
        return statement.where(model.deleted != 0)
    return statement


def soft_delete_values(row) -> dict:
    return {"deleted": row.id, "deleted_at": utcnow()}


def keyset_after(model, marker_row, sort_desc: bool = True):
    """Rows after ``marker_row`` in (created_at, id) order, for marker pagination.

    NOTE: keyset rather than OFFSET so a page boundary stays stable while
    rows are added concurrently.
    """
    created, ident = marker_row.created_at, marker_row.id
    if sort_desc:
        return sa.or_(model.created_at < created,
                      sa.and_(model.created_at == created, model.id < ident))
    return sa.or_(model.created_at > created,
                  sa.and_(model.created_at == created, model.id > ident))


def lock_live_instance(session, instance_uuid) -> int:
    """Lock the live instance row ``FOR UPDATE``; its id, else ``InstanceNotFound``.

    The lock that orders a server's volume writes: the attach a request
    records and the BDM the conductor writes for it both check, then write,
    under it (SQLite's writer transaction is exclusive already).
    """
    locked = session.scalars(sa.select(models.Instance.id).where(
        models.Instance.uuid == instance_uuid,
        models.Instance.deleted == 0).with_for_update()).first()
    if locked is None:
        raise exception.InstanceNotFound(instance_id=instance_uuid)
    return locked
