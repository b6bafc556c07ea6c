"""Accepted attach and detach requests, kept until a conductor has settled them.

Revision ID: d7e2f5a9c8b1
Revises: c4f1a8e2d6b3
Create Date: 2026-12-03

Why a table: from API 2.101 an attach (and every detach) is answered before
any conductor has done anything, and the message bus forgets a request once
a conductor takes it. A row per accepted request lets another conductor
re-run it when the one that took it died or the cast never arrived. A new
table only: services of the previous release never read it.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "d7e2f5a9c8b1"
down_revision = "c4f1a8e2d6b3"
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade():
    op.create_table(
        "volume_requests",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("volume_id", sa.String(36), nullable=False),
        sa.Column("params", sa.Text(), nullable=True),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("created_at", DateTime, nullable=True),
        sa.Column("claimed_by", sa.String(255), nullable=True),
        sa.Column("claimed_at", DateTime, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("id", name="pk_volume_requests"),
        sa.UniqueConstraint("uuid", name="uniq_volume_requests0uuid"),
    )
    op.create_index("volume_requests_claimed_by_created_at_idx", "volume_requests",
                    ["claimed_by", "created_at"])
