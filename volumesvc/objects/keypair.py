"""Key pairs: a user's public keys, by name (the name is unique per user).

Creation checks the user's ``key_pairs`` quota in the same transaction as
the insert, under the lock of the owner's project (volumesvc/quota.py), so
two concurrent creations cannot both take the last slot.
"""

import dataclasses
import datetime

import sqlalchemy as sa
from oslo_db import exception as db_exc

from volumesvc import exception, quota
from volumesvc.db import models
from volumesvc.objects import base


@dataclasses.dataclass
class KeyPair(base.DictMixin):
    id: int | None = None
    name: str | None = None
    user_id: str | None = None
    fingerprint: str | None = None
    public_key: str | None = None
    type: str = "ssh"
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None


def _get_row(session, user_id, name):
    return session.scalars(sa.select(models.KeyPair).where(
        models.KeyPair.user_id == user_id, models.KeyPair.name == name)).first()


def get_by_name(db, context, user_id, name) -> KeyPair:
    with db.reader(context) as session:
        row = _get_row(session, user_id, name)
        if row is None:
            raise exception.KeypairNotFound(name=name, user_id=user_id)
        return KeyPair.from_model(row)


def list_keypairs(db, context, user_id, *, limit=None, marker=None) -> list[KeyPair]:
    """The user's key pairs by name; ``marker`` is the last name of the previous page."""
    model = models.KeyPair
    statement = sa.select(model).where(model.user_id == user_id)
    with db.reader(context) as session:
        if marker is not None:
            if _get_row(session, user_id, marker) is None:
                raise exception.MarkerNotFound(marker=marker)
            statement = statement.where(model.name > marker)
        statement = statement.order_by(model.name)
        if limit is not None:
            statement = statement.limit(limit)
        return [KeyPair.from_model(row) for row in session.scalars(statement)]


def create(db, context, conf, values: dict, project_id) -> KeyPair:
    """Insert a key pair; 409 for a name the user already has, 403 past the quota."""
    quota.ensure_lock_row(db, context, project_id)
    try:
        with db.writer(context) as session:
            quota.lock_project(session, project_id)
            if _get_row(session, values["user_id"], values["name"]) is not None:
                raise exception.KeyPairExists(key_name=values["name"])
            quota.check_key_pairs(session, conf, values["user_id"])
            row = models.KeyPair(**values)
            session.add(row)
            session.flush()
            return KeyPair.from_model(row)
    except (db_exc.DBDuplicateEntry, sa.exc.IntegrityError) as exc:
        raise exception.KeyPairExists(key_name=values["name"]) from exc


def destroy(db, context, user_id, name) -> None:
    with db.writer(context) as session:
        row = _get_row(session, user_id, name)
        if row is None:
            raise exception.KeypairNotFound(name=name, user_id=user_id)
        session.delete(row)
