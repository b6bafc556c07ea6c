"""Key pairs, quota limits (per project and per user) and the per-project quota lock.

Revision ID: 9e3b7c41d8a2
Revises: 5e8b1c4f9a27
Create Date: 2026-12-02

Why new tables only: nothing existing changes, so the migration is safe to
run while older services still use the database. Usage is never stored: it
is counted from the instances and key pairs themselves (volumesvc/quota.py).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "9e3b7c41d8a2"
down_revision = "5e8b1c4f9a27"
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _timestamps():
    return [sa.Column("created_at", DateTime, nullable=True),
            sa.Column("updated_at", DateTime, nullable=True)]


def _limit_table(name, *scope):
    """A table of limits: one hard_limit per resource of one scope (project, user)."""
    keys = (*scope, "resource")
    op.create_table(
        name,
        *_timestamps(),
        sa.Column("id", sa.Integer, nullable=False),
        *[sa.Column(key, sa.String(255), nullable=False) for key in keys],
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{name}"),
        sa.UniqueConstraint(*keys, name=f"uniq_{name}0{'0'.join(keys)}"),
    )


def upgrade():
    op.create_table(
        "key_pairs",
        *_timestamps(),
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=True),
        sa.Column("public_key", sa.Text, nullable=True),
        sa.Column("type", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_key_pairs"),
        sa.UniqueConstraint("user_id", "name", name="uniq_key_pairs0user_id0name"),
    )
    _limit_table("quotas", "project_id")
    _limit_table("project_user_quotas", "project_id", "user_id")
    op.create_table(
        "quota_locks",
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("project_id", name="pk_quota_locks"),
    )


def downgrade():
    for table in ("quota_locks", "project_user_quotas", "quotas", "key_pairs"):
        op.drop_table(table)
