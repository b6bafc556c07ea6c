"""The migrations of every server, filtered and paged: what ``GET /os-migrations`` reads.

Kept apart from ``objects/migration.py`` (the record a move reads and
writes) because only the API lists across servers. Filters are Nova's
``migration_get_all_by_filters``: ``host`` matches the source or the
destination compute (and then ``source_compute`` is ignored), the
``changes_*`` bounds compare ``updated_at`` (a row never updated matches
neither), the others are equalities.
"""

import dataclasses
import datetime

import sqlalchemy as sa

from volumesvc import exception
from volumesvc.db import models
from volumesvc.objects import base
from volumesvc.objects.migration import Migration


@dataclasses.dataclass
class MigrationFilters:
    """What to keep; None means "not filtered on"."""

    status: str | None = None
    host: str | None = None
    source_compute: str | None = None
    instance_uuid: str | None = None
    migration_type: str | None = None
    user_id: str | None = None
    project_id: str | None = None
    changes_since: datetime.datetime | None = None
    changes_before: datetime.datetime | None = None


def _clauses(filters: MigrationFilters):
    model = models.Migration
    if filters.host is not None:
        yield sa.or_(model.source_compute == filters.host, model.dest_compute == filters.host)
    elif filters.source_compute is not None:
        yield model.source_compute == filters.source_compute
    for column, value in ((model.status, filters.status),
                          (model.instance_uuid, filters.instance_uuid),
                          (model.migration_type, filters.migration_type),
                          (model.user_id, filters.user_id),
                          (model.project_id, filters.project_id)):
        if value is not None:
            yield column == value
    if filters.changes_since is not None:
        yield model.updated_at >= filters.changes_since
    if filters.changes_before is not None:
        yield model.updated_at <= filters.changes_before


def list_migrations(db, context, filters: MigrationFilters | None = None, *,
                    newest_first=False, limit=None, marker=None) -> list[Migration]:
    """The migrations ``filters`` keeps.

    ``newest_first``: ordered by (created_at, id) descending, Nova's order
    from 2.59; else by id, the order of the rows. ``marker``: the uuid of
    the last migration of the previous page, looked up among all
    migrations whatever the filters (``MarkerNotFound`` when none has it);
    the page holds the migrations after it in the newest-first order.
    """
    model = models.Migration
    statement = sa.select(model)
    for clause in _clauses(filters or MigrationFilters()):
        statement = statement.where(clause)
    if limit == 0:
        return []
    with db.reader(context) as session:
        if marker is not None:
            marker_row = session.scalars(sa.select(model).where(model.uuid == marker)).first()
            if marker_row is None:
                raise exception.MarkerNotFound(marker=marker)
            statement = statement.where(base.keyset_after(model, marker_row))
        if newest_first or marker is not None:
            statement = statement.order_by(model.created_at.desc(), model.id.desc())
        else:
            statement = statement.order_by(model.id)
        if limit is not None:
            statement = statement.limit(limit)
        return [Migration.from_model(row) for row in session.scalars(statement)]
