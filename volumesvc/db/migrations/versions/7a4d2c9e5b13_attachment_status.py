"""Attachment status and last fault on block device mappings (API 2.106).

Revision ID: 7a4d2c9e5b13
Revises: 3c1e9f7d2a4b
Create Date: 2026-11-30

Why columns on the BDM rather than a table of their own: the status is the
BDM's own lifecycle (reserved, in the guest, going away) and every writer
already holds the BDM row. All four are nullable and added, never altered,
so the other branches that touch BDMs merge without a conflict. A NULL
``attach_status`` means "written by a compute that does not report
progress" and is shown as ``attached`` (the rolling-upgrade rule).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "7a4d2c9e5b13"
down_revision = "3c1e9f7d2a4b"
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade():
    op.add_column("block_device_mappings",
                  sa.Column("attach_status", sa.String(16), nullable=True))
    op.add_column("block_device_mappings",
                  sa.Column("fault_code", sa.Integer(), nullable=True))
    op.add_column("block_device_mappings",
                  sa.Column("fault_message", sa.Text(), nullable=True))
    op.add_column("block_device_mappings",
                  sa.Column("fault_at", DateTime, nullable=True))
