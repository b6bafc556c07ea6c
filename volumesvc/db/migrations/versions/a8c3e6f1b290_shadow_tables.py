"""Shadow tables for ``volumesvc-manage db archive_deleted_rows`` and ``db purge``.

Revision ID: a8c3e6f1b290
Revises: f3a9d2c7b418
Create Date: 2026-12-05

Why: soft-deleted servers, BDMs and services, with their actions, events,
faults and tags, were kept in the live tables for ever, slowing every query
that skips them. The archive command moves them into a ``shadow_<table>``
of the same columns, and purge deletes them from there. Each shadow table
copies its table's columns and primary key as the schema has them at this
revision (read from the database, so the copy is exact on every backend);
it has no foreign keys, unique constraints or defaults. New tables only:
services of the previous release never read them.
"""

import sqlalchemy as sa
from alembic import op

revision = "a8c3e6f1b290"
down_revision = "f3a9d2c7b418"
branch_labels = None
depends_on = None

# The soft-deletable tables and every table referring to them by foreign key.
TABLES = ("instances", "block_device_mappings", "services", "instance_actions",
          "instance_faults", "tags", "instance_actions_events")


def upgrade():
    inspector = sa.inspect(op.get_bind())
    for name in TABLES:
        primary_key = set(inspector.get_pk_constraint(name)["constrained_columns"])
        columns = [sa.Column(c["name"], c["type"], nullable=c["nullable"],
                             primary_key=c["name"] in primary_key, autoincrement=False)
                   for c in inspector.get_columns(name)]
        op.create_table(f"shadow_{name}", *columns)
