"""Flavors: the sizes instances are booted with.

Instances keep a JSON copy of their flavor, so deleting a flavor here (a
hard delete, as in Nova's API database) never changes a running instance.
"""

import dataclasses
import datetime

import sqlalchemy as sa
from oslo_db import exception as db_exc

from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base


@dataclasses.dataclass
class Flavor(base.DictMixin):
    id: int | None = None
    flavorid: str | None = None
    name: str | None = None
    memory_mb: int = 0
    vcpus: int = 0
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap: int = 0
    rxtx_factor: float = 1.0
    is_public: bool = True
    disabled: bool = False
    description: str | None = None
    extra_specs: dict = dataclasses.field(default_factory=dict)
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None

    @classmethod
    def from_model(cls, row, **extra):
        return super().from_model(row, extra_specs=dict(row.extra_specs or {}), **extra)

    def instance_copy(self) -> dict:
        """The copy stored in ``instances.flavor`` when an instance boots."""
        keys = ("flavorid", "name", "vcpus", "memory_mb", "root_gb", "ephemeral_gb",
                "swap", "extra_specs")
        values = self.to_dict()
        return {key: values[key] for key in keys}


def _get_row(session, **filters):
    statement = sa.select(models.Flavor)
    for key, value in filters.items():
        statement = statement.where(getattr(models.Flavor, key) == value)
    return session.scalars(statement).first()


def get_by_flavorid(db, context, flavorid) -> Flavor:
    with db.reader(context) as session:
        row = _get_row(session, flavorid=str(flavorid))
        if row is None:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        return Flavor.from_model(row)


def get_by_id(db, context, flavor_id: int) -> Flavor:
    """By internal id (``instances.flavor_id``)."""
    with db.reader(context) as session:
        row = _get_row(session, id=flavor_id)
        if row is None:
            raise exception.FlavorNotFound(flavor_id=flavor_id)
        return Flavor.from_model(row)


def list_flavors(db, context, *, is_public=True, min_memory_mb=None, min_root_gb=None,
                 include_disabled=False, limit=None, marker=None) -> list[Flavor]:
    """Flavors sorted by flavorid (Nova's default sort), with marker pagination.

    ``is_public``: True for public only, False for private only, None for all.
    ``marker`` is a flavorid (FlavorNotFound-free: a bad marker is MarkerNotFound).
    """
    model = models.Flavor
    statement = sa.select(model)
    if is_public is not None:
        statement = statement.where(model.is_public == bool(is_public))
    if not include_disabled:
        statement = statement.where(model.disabled == sa.false())
    if min_memory_mb is not None:
        statement = statement.where(model.memory_mb >= min_memory_mb)
    if min_root_gb is not None:
        statement = statement.where(model.root_gb >= min_root_gb)
    with db.reader(context) as session:
        if marker is not None:
            marker_row = _get_row(session, flavorid=str(marker))
            if marker_row is None:
                raise exception.MarkerNotFound(marker=marker)
            statement = statement.where(sa.or_(
                model.flavorid > marker_row.flavorid,
                sa.and_(model.flavorid == marker_row.flavorid, model.id > marker_row.id)))
        statement = statement.order_by(model.flavorid, model.id)
        if limit is not None:
            statement = statement.limit(limit)
        return [Flavor.from_model(row) for row in session.scalars(statement)]


def create(db, context, values: dict) -> Flavor:
    """Insert a flavor; a name or flavorid already used raises FlavorExists."""
    values = dict(values)
    values["flavorid"] = str(values["flavorid"])
    values.setdefault("extra_specs", {})
    unknown = (set(values) - set(Flavor.__dataclass_fields__)) | ({"id"} & set(values))
    if unknown:
        raise exception.Invalid(reason=f"cannot set flavor fields {sorted(unknown)}")
    try:
        with db.writer(context) as session:
            row = models.Flavor(**values)
            session.add(row)
            session.flush()
            return Flavor.from_model(row)
    except (db_exc.DBDuplicateEntry, sa.exc.IntegrityError) as exc:
        # NOTE: oslo.db translates duplicates to DBDuplicateEntry; a bare
        # IntegrityError is caught too because MariaDB inside savepoints
        # has been seen to escape the translation.
        raise exception.FlavorExists(name=values.get("name"),
                                     flavor_id=values["flavorid"]) from exc


def destroy(db, context, flavorid) -> None:
    with db.writer(context) as session:
        row = _get_row(session, flavorid=str(flavorid))
        if row is None:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        session.delete(row)
