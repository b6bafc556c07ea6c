"""Migrations: the flavors of a resize and the source's connections.

Revision ID: 8c5d3a7e1b46
Revises: 4b8e1d6a2f93
Create Date: 2026-12-06

Why: a resize is reverted to the flavor the server had, and confirmed
with the one it was given, even when either was deleted meanwhile, so the
row keeps both as they were (``old_flavor``, ``new_flavor``: the server's
embedded flavor, JSON). An evacuation leaves connections on the old host
that only that host can drop, after it comes back; the BDMs then name the
new host's, so the row keeps the old ones (``source_connections``, volume
id → connection info). The archive's ``shadow_migrations`` gets the same
columns. Nullable columns on a table no released service reads.
"""

import sqlalchemy as sa
from alembic import op

revision = "8c5d3a7e1b46"
down_revision = "4b8e1d6a2f93"
branch_labels = None
depends_on = None

COLUMNS = ("old_flavor", "new_flavor", "source_connections")


def upgrade():
    for table in ("migrations", "shadow_migrations"):
        for name in COLUMNS:
            op.add_column(table, sa.Column(name, sa.Text(), nullable=True))
