"""Server tags (API 2.26): the rows of the ``tags`` table, one per tag.

Each write is one transaction that also checks the server is live and, for
additions, that the server keeps within :data:`MAX_TAGS`: the count and the
insert happen under the instance row's lock, so two concurrent additions
cannot both pass the check and leave 51 tags.
"""

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models

# Nova's limit on tags per server (API 2.26).
MAX_TAGS = 50


def _lock_instance(session, instance_uuid):
    """Lock the live instance row (serializes tag writes per server), else 404."""
    model = models.Instance
    row = session.scalars(sa.select(model).where(
        model.uuid == instance_uuid, model.deleted == 0).with_for_update()).first()
    if row is None:
        raise exception.InstanceNotFound(instance_id=instance_uuid)
    # NOTE: SQLite ignores FOR UPDATE; its writer transaction is already
    # exclusive once the update below takes the database lock.
    session.execute(sa.update(model).where(model.id == row.id).values(
        updated_at=models.utcnow()).execution_options(synchronize_session=False))


def tags_by_instance(session, uuids) -> dict:
    """{instance uuid: sorted tags} for ``uuids`` (every uuid present)."""
    uuids = list(uuids)
    found: dict = {uuid: [] for uuid in uuids}
    if not uuids:
        return found
    statement = sa.select(models.Tag.resource_id, models.Tag.tag).where(
        models.Tag.resource_id.in_(uuids)).order_by(models.Tag.tag)
    for resource_id, tag in session.execute(statement):
        found[resource_id].append(tag)
    return found


def insert(session, instance_uuid, tags):
    """Add ``tags`` to a server being created (same transaction as its row)."""
    for tag in sorted(set(tags)):
        session.add(models.Tag(resource_id=instance_uuid, tag=tag))


def get_all(db, context, instance_uuid) -> list:
    with db.reader(context) as session:
        return tags_by_instance(session, [instance_uuid])[instance_uuid]


def exists(db, context, instance_uuid, tag) -> bool:
    with db.reader(context) as session:
        return session.scalars(sa.select(models.Tag.tag).where(
            models.Tag.resource_id == instance_uuid, models.Tag.tag == tag)).first() is not None


def replace(db, context, instance_uuid, tags) -> list:
    """Make ``tags`` the server's whole set; returns it sorted."""
    wanted = sorted(set(tags))
    if len(wanted) > MAX_TAGS:
        raise exception.TooManyTags(limit=MAX_TAGS)
    with db.writer(context) as session:
        _lock_instance(session, instance_uuid)
        session.execute(sa.delete(models.Tag).where(models.Tag.resource_id == instance_uuid))
        insert(session, instance_uuid, wanted)
    return wanted


def add(db, context, instance_uuid, tag) -> bool:
    """Add one tag; False when it was already there. TooManyTags at the limit."""
    with db.writer(context) as session:
        _lock_instance(session, instance_uuid)
        current = tags_by_instance(session, [instance_uuid])[instance_uuid]
        # NOTE: Nova's order: a full server refuses even a tag it already has.
        if len(current) >= MAX_TAGS:
            raise exception.TooManyTags(limit=MAX_TAGS)
        if tag in current:
            return False
        session.add(models.Tag(resource_id=instance_uuid, tag=tag))
    return True


def delete(db, context, instance_uuid, tag) -> bool:
    """Remove one tag; False when the server did not have it."""
    with db.writer(context) as session:
        _lock_instance(session, instance_uuid)
        result = session.execute(sa.delete(models.Tag).where(
            models.Tag.resource_id == instance_uuid, models.Tag.tag == tag))
        return result.rowcount > 0


def delete_all(db, context, instance_uuid):
    with db.writer(context) as session:
        _lock_instance(session, instance_uuid)
        session.execute(sa.delete(models.Tag).where(models.Tag.resource_id == instance_uuid))


def filter_clauses(model, *, tags=None, tags_any=None, not_tags=None, not_tags_any=None):
    """WHERE clauses on ``model`` (instances) for the four tag filters of the list.

    ``tags``: has every one; ``tags-any``: has at least one; ``not-tags``:
    lacks at least one of them (not all present); ``not-tags-any``: has none.
    """
    def has(tag):
        return sa.exists().where(models.Tag.resource_id == model.uuid, models.Tag.tag == tag)

    clauses: list = []
    if tags:
        clauses.extend(has(tag) for tag in tags)
    if tags_any:
        clauses.append(sa.or_(*(has(tag) for tag in tags_any)))
    if not_tags:
        clauses.append(sa.not_(sa.and_(*(has(tag) for tag in not_tags))))
    if not_tags_any:
        clauses.append(sa.not_(sa.or_(*(has(tag) for tag in not_tags_any))))
    return clauses
