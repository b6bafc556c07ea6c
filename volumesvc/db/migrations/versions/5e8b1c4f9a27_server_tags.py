"""Server tags in a table of their own (API 2.26 tag routes and list filters).

Revision ID: 5e8b1c4f9a27
Revises: 7a4d2c9e5b13
Create Date: 2026-12-02

Why a table: the ``tags``, ``tags-any``, ``not-tags`` and ``not-tags-any``
filters of ``GET /servers`` must be answered by the database, under the
page limit, on every backend; a JSON document in a text column cannot be
queried that way. Tags written into ``instances.tags`` before this revision
are copied over. The old column stays (expand only): an API of the previous
release that is still running during a rolling upgrade reads it.
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "5e8b1c4f9a27"
down_revision = "7a4d2c9e5b13"
branch_labels = None
depends_on = None


def upgrade():
    tags = op.create_table(
        "tags",
        sa.Column("resource_id", sa.String(36), nullable=False),
        sa.Column("tag", sa.String(80), nullable=False),
        sa.ForeignKeyConstraint(["resource_id"], ["instances.uuid"],
                                name="fk_tags_resource_id_instances"),
        sa.PrimaryKeyConstraint("resource_id", "tag", name="pk_tags"),
    )
    op.create_index("tags_tag_idx", "tags", ["tag"])
    connection = op.get_bind()
    rows = connection.execute(sa.text(
        "SELECT uuid, tags FROM instances WHERE tags IS NOT NULL")).all()
    copied = [{"resource_id": uuid, "tag": tag}
              for uuid, text in rows for tag in sorted(set(json.loads(text) or []))]
    if copied:
        op.bulk_insert(tags, copied)
