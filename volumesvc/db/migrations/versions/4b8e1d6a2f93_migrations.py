"""Migrations: one row per move of a server between hosts (live migration).

Revision ID: 4b8e1d6a2f93
Revises: 239eb3cadaca
Create Date: 2026-12-06

Why a table: ``os-migrations`` and ``servers/{id}/migrations`` list the
moves, abort and force-complete name one, and a move a process died in is
resumed or undone from what its row says (status, hosts, and the
destination's Cinder attachments). The row refers to its server, so the
archive moves it with the server: ``shadow_migrations`` has its columns.
A new table only: services of the previous release never read it.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "4b8e1d6a2f93"
down_revision = "239eb3cadaca"
branch_labels = None
depends_on = None

DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _columns(shadow):
    def string(name, length=255, nullable=True):
        return sa.Column(name, sa.String(length), nullable=nullable)
    return [
        sa.Column("created_at", DateTime, nullable=True),
        sa.Column("updated_at", DateTime, nullable=True),
        sa.Column("id", sa.Integer, nullable=False, primary_key=shadow,
                  autoincrement=not shadow),
        string("uuid", 36, False),
        string("instance_uuid", 36, False),
        string("migration_type", 32, False),
        string("status", 32, False),
        string("source_compute"), string("source_node"), string("dest_compute"),
        string("dest_node"), string("dest_host"),
        sa.Column("old_instance_type_id", sa.Integer, nullable=True),
        sa.Column("new_instance_type_id", sa.Integer, nullable=True),
        *[sa.Column(f"{kind}_{what}", sa.BigInteger, nullable=True)
          for kind in ("memory", "disk") for what in ("total", "processed", "remaining")],
        string("user_id"), string("project_id"), string("requested", 32),
        sa.Column("dest_attachments", sa.Text(), nullable=True),
        sa.Column("dest_connections", sa.Text(), nullable=True),
    ]


def upgrade():
    op.create_table(
        "migrations", *_columns(False),
        sa.PrimaryKeyConstraint("id", name="pk_migrations"),
        sa.UniqueConstraint("uuid", name="uniq_migrations0uuid"),
        sa.ForeignKeyConstraint(["instance_uuid"], ["instances.uuid"],
                                name="fk_migrations_instance_uuid_instances"),
    )
    op.create_index("migrations_instance_uuid_status_idx", "migrations",
                    ["instance_uuid", "status"])
    op.create_index("migrations_status_updated_at_idx", "migrations",
                    ["status", "updated_at"])
    op.create_table("shadow_migrations", *_columns(True))
