"""Read-only attachments on block device mappings (API 2.108).

Revision ID: e3a9b6d1f4c7
Revises: 6d2f8b3e1c57
Create Date: 2026-12-05

Why a column on the BDM: whether the guest got the volume read-only is the
attachment's own property, needed again every time a new Cinder attachment
is made for the same BDM (shelve offload, swap) and shown by
os-volume_attachments; Cinder's ``attach_mode`` is not at hand in those
places. Existing rows become ``false``: before 2.108 nobody could ask for a
read-only attachment (a volume with Cinder's read-only flag still gets a
read-only disk from its connection info). The archive's
``shadow_block_device_mappings`` gets the same column, as every column of
an archived table must.
"""

import sqlalchemy as sa
from alembic import op

revision = "e3a9b6d1f4c7"
down_revision = "6d2f8b3e1c57"
branch_labels = None
depends_on = None


def upgrade():
    for table in ("block_device_mappings", "shadow_block_device_mappings"):
        op.add_column(table, sa.Column("read_only", sa.Boolean(), nullable=False,
                                       server_default=sa.false()))
