"""The device name an attach asked for, on block device mappings (API 2.107).

Revision ID: 239eb3cadaca
Revises: 6433e749e3d1
Create Date: 2026-12-05

Why a column: the device in an attach request is a hint the compute does not
follow (the libvirt driver names the disk itself, as Nova's does), so the
BDM's device_name is not what the request said. A 2.107 retry of an
attach that gave a hint repeats that hint, and must be told apart from a
request for another device: it is compared with what the attach asked for.
Existing rows get NULL (nothing recorded; a given device is then compared
with the BDM's name only, as before). The archive's
shadow_block_device_mappings gets the same column, as every column of
an archived table must.
"""

import sqlalchemy as sa
from alembic import op

revision = "239eb3cadaca"
down_revision = "6433e749e3d1"
branch_labels = None
depends_on = None


def upgrade():
    for table in ("block_device_mappings", "shadow_block_device_mappings"):
        op.add_column(table, sa.Column("requested_device", sa.String(255), nullable=True))
