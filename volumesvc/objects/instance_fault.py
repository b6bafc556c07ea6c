"""Instance faults: the last error shown in a server's ``fault`` field."""

import dataclasses
import datetime

import sqlalchemy as sa

from volumesvc.db import models
from volumesvc.objects import base

# The message column is a VARCHAR(255); longer text belongs in ``details``.
MESSAGE_LENGTH = 255


@dataclasses.dataclass
class InstanceFault(base.DictMixin):
    id: int | None = None
    instance_uuid: str | None = None
    code: int = 500
    message: str | None = None
    details: str | None = None
    host: str | None = None
    created_at: datetime.datetime | None = None


def create(db, context, *, instance_uuid, code, message, details=None,
           host=None) -> InstanceFault:
    with db.writer(context) as session:
        row = models.InstanceFault(instance_uuid=instance_uuid, code=code,
                                   message=(message or "")[:MESSAGE_LENGTH],
                                   details=details, host=host)
        session.add(row)
        session.flush()
        return InstanceFault.from_model(row)


def latest_for_instances(db, context, instance_uuids) -> dict[str, InstanceFault]:
    """The newest fault of each instance that has one (a server list needs many at once)."""
    uuids = list(instance_uuids)
    if not uuids:
        return {}
    model = models.InstanceFault
    newest = (sa.select(sa.func.max(model.id).label("id"))
              .where(model.instance_uuid.in_(uuids))
              .group_by(model.instance_uuid).subquery())
    # NOTE: max(id) rather than max(created_at): ids are monotonic, while
    # two faults in the same second tie on a MySQL DATETIME.
    statement = sa.select(model).join(newest, model.id == newest.c.id)
    with db.reader(context) as session:
        return {row.instance_uuid: InstanceFault.from_model(row)
                for row in session.scalars(statement)}


def latest(db, context, instance_uuid) -> InstanceFault | None:
    return latest_for_instances(db, context, [instance_uuid]).get(instance_uuid)
