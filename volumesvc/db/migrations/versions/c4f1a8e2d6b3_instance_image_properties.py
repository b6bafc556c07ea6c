"""The image properties of an image-backed server, kept from its boot (API 2.98).

Revision ID: c4f1a8e2d6b3
Revises: 9e3b7c41d8a2
Create Date: 2026-12-02

Why a copy on the instance: from 2.98 a server's ``image`` shows the
properties of the image it was booted from as they were at boot (the image
may have changed or gone since), so they are stored with the instance. A
nullable column, added only: rows of servers booted before it show no
properties.
"""

import sqlalchemy as sa
from alembic import op

revision = "c4f1a8e2d6b3"
down_revision = "9e3b7c41d8a2"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("instances", sa.Column("image_properties", sa.Text(), nullable=True))
