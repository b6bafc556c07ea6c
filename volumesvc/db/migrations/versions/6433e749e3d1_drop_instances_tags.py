"""Drop ``instances.tags``, unused since the tags table (revision 5e8b1c4f9a27).

Revision ID: 6433e749e3d1
Revises: e3a9b6d1f4c7
Create Date: 2026-12-05

Why now: the column was kept only so that a running API of a previous
release could still read it during a rolling upgrade. There was no previous
release (0.1.0 is the first), so nothing reads it; its contents were copied
into ``tags`` by 5e8b1c4f9a27 and nothing has written it since. Its copy in
``shadow_instances`` goes too: a shadow table has its table's columns.
"""

from alembic import op

revision = "6433e749e3d1"
down_revision = "e3a9b6d1f4c7"
branch_labels = None
depends_on = None


def upgrade():
    for table in ("instances", "shadow_instances"):
        op.drop_column(table, "tags")
