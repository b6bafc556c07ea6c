"""Archive soft-deleted rows into the shadow tables, and purge those.

Why: a deleted server stays in ``instances`` (``deleted`` set to its id) with
its BDMs, tags, actions, events and faults, so the API's and the
conductor's queries read past ever more dead rows. ``volumesvc-manage db
archive_deleted_rows`` moves them into the ``shadow_*`` tables
(``models.SHADOW_TABLES``), where operators can still read them, and ``db
purge`` deletes them from there, as Nova's commands of the same names do.

A row is archived together with every row that refers to it by foreign key
(found from the models, children first, in one transaction), so no row is
ever left pointing at a parent that is gone. What stays although deleted:

* a deleted server that still has an accepted volume request
  (``volume_requests``): a conductor may still owe Cinder a detach for it
  and reads the server and its BDMs to do it;
* a failed attach the API still shows (API 2.106: an ``error`` BDM younger
  than ``[api] failed_attachment_ttl``).
"""

import collections
import datetime

import sqlalchemy as sa

from volumesvc.db import models
from volumesvc.states import attach_states


def _referrers(table: sa.Table):
    """(child table, child column, parent column) for each foreign key to ``table``."""
    for name in models.ARCHIVED_TABLES:
        child = models.Base.metadata.tables[name]
        for fk in child.foreign_keys:
            if fk.column.table is table:
                yield child, fk.parent, fk.column


def _tree(table: sa.Table, where, tables=None):
    """(table, condition) for the rows ``where`` selects and every row referring to them.

    Children come before their parents, the order in which they can be
    deleted. ``tables`` maps a live table to the one the conditions are
    written against (the shadow tables when purging).
    """
    tables = tables or {}
    target = tables.get(table.name, table)
    steps = []
    for child, child_column, parent_column in _referrers(table):
        child_target = tables.get(child.name, child)
        keys = sa.select(target.c[parent_column.name]).where(where)
        steps += _tree(child, child_target.c[child_column.name].in_(keys), tables)
    steps.append((target, where))
    return steps


def _move(connection, table: sa.Table, where) -> int:
    """Copy the rows ``where`` selects into the shadow table, then delete them."""
    shadow = models.SHADOW_TABLES[table.name]
    key = list(shadow.primary_key.columns)
    if len(key) == 1:
        # NOTE: SQLite hands the highest id out again once its row is gone
        # (no AUTOINCREMENT keyword), so a row archived earlier may hold the
        # id of one archived now; the earlier one, long deleted, gives way.
        connection.execute(shadow.delete().where(
            key[0].in_(sa.select(table.c[key[0].name]).where(where))))
    connection.execute(shadow.insert().from_select(
        [c.name for c in table.columns], sa.select(table).where(where)))
    return connection.execute(table.delete().where(where)).rowcount


def _deleted(table: sa.Table, before):
    where = table.c.deleted != 0
    if before is not None:
        where = sa.and_(where, table.c.deleted_at < before)
    return where


def _archivable(table: sa.Table, before, now, failed_attachment_ttl):
    """The condition selecting ``table``'s soft-deleted rows that may go now."""
    where = _deleted(table, before)
    owed = sa.select(models.VolumeRequest.instance_uuid)
    if table.name == "instances":
        where = sa.and_(where, table.c.uuid.not_in(owed))
    elif table.name == "block_device_mappings":
        oldest_shown = now - datetime.timedelta(seconds=max(failed_attachment_ttl, 0))
        shown = sa.and_(table.c.attach_status == attach_states.ERROR,
                        table.c.fault_at >= oldest_shown)
        where = sa.and_(where, table.c.instance_uuid.not_in(owed),
                        sa.or_(table.c.attach_status.is_(None), sa.not_(shown)))
    return where


def archive_deleted_rows(database, *, max_rows: int, before=None,
                         failed_attachment_ttl: int = 0) -> dict[str, int]:
    """Move up to about ``max_rows`` rows into the shadow tables; rows moved per table.

    ``max_rows`` counts every row moved, children included, and is checked
    after each deleted row's whole tree, so a pass may go over it by one
    tree (a tree is never split). ``before`` (naive UTC) keeps rows deleted
    at or after it. An empty result means nothing is left to archive.
    """
    moved: collections.Counter = collections.Counter()
    now = models.utcnow()
    with database.get_engine().begin() as connection:
        for name in models.SOFT_DELETE_TABLES:
            table = models.Base.metadata.tables[name]
            left = max_rows - sum(moved.values())
            if left <= 0:
                break
            ids = connection.scalars(
                sa.select(table.c.id)
                .where(_archivable(table, before, now, failed_attachment_ttl))
                .order_by(table.c.id).limit(left)).all()
            for row_id in ids:
                for target, where in _tree(table, table.c.id == row_id):
                    moved[target.name] += _move(connection, target, where)
                if sum(moved.values()) >= max_rows:
                    break
    return {name: count for name, count in moved.items() if count}


def purge_shadow_tables(database, *, before=None) -> dict[str, int]:
    """Delete archived rows; rows deleted per shadow table.

    Without ``before`` every shadow table is emptied. With it, the archived
    servers, BDMs and services deleted before that time go, each with the
    archived rows that referred to it (rows such as tags have no time of
    their own; they go with their server).
    """
    deleted: collections.Counter = collections.Counter()
    with database.get_engine().begin() as connection:
        if before is None:
            for shadow in reversed(list(models.SHADOW_TABLES.values())):
                deleted[shadow.name] += connection.execute(shadow.delete()).rowcount
        else:
            for name in models.SOFT_DELETE_TABLES:
                table = models.Base.metadata.tables[name]
                shadow = models.SHADOW_TABLES[name]
                for target, where in _tree(table, shadow.c.deleted_at < before,
                                           models.SHADOW_TABLES):
                    deleted[target.name] += connection.execute(
                        target.delete().where(where)).rowcount
    return {name: count for name, count in deleted.items() if count}
