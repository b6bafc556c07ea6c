"""Migrations: what the admin asked of a move beyond its hosts.

Revision ID: 2d6e9c1b7f35
Revises: 8c5d3a7e1b46
Create Date: 2026-12-06

Why: a conductor that dies after the API accepted a move, before any
compute took it, loses the cast and with it the options the admin gave
(``force``, and an evacuation's 2.95 ``target_state``). Another conductor
drives such a move again from its row, so the row keeps them
(``request_options``, JSON). The archive's ``shadow_migrations`` gets the
same column. A nullable column on a table no released service reads.
"""

import sqlalchemy as sa
from alembic import op

revision = "2d6e9c1b7f35"
down_revision = "8c5d3a7e1b46"
branch_labels = None
depends_on = None


def upgrade():
    for table in ("migrations", "shadow_migrations"):
        op.add_column(table, sa.Column("request_options", sa.Text(), nullable=True))
