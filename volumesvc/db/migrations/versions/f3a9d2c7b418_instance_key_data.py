"""The public key of a server's key pair, kept with the server from its boot.

Revision ID: f3a9d2c7b418
Revises: d7e2f5a9c8b1
Create Date: 2026-12-05

Why a copy on the instance (Nova's ``key_data`` column): the config drive
a compute writes holds the key pair's public key under ``public_keys``, and
computes never read the database; the key pair itself may be deleted or
replaced after the boot while the guest keeps the key it was given. A
nullable column, added only: servers booted before it have none, and their
config drive lists no key.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "f3a9d2c7b418"
down_revision = "d7e2f5a9c8b1"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("instances", sa.Column(
        "key_data", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb"),
        nullable=True))
