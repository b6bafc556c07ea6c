"""m1.nano gets 128 MiB: the all-in-one's starter image runs a Linux guest.

Revision ID: 6d2f8b3e1c57
Revises: a8c3e6f1b290
Create Date: 2026-12-05

Why: the starter image is a real guest now (doc/source/admin/guest-image.rst,
"Memory"); with 64 MiB its kernel never reaches init and the firmware reboots
it forever, 96 MiB is the least that boots. Only the row as revision
3c1e9f7d2a4b inserted it (id "42", 64 MiB) changes; a server keeps the copy
of the flavor it was booted with.
"""

import sqlalchemy as sa
from alembic import op

revision = "6d2f8b3e1c57"
down_revision = "a8c3e6f1b290"
branch_labels = None
depends_on = None

NANO_MEMORY_MB = 128

# A frozen copy of the columns this revision touches, not models.Flavor.
_flavors = sa.table(
    "flavors",
    sa.column("flavorid", sa.String), sa.column("name", sa.String),
    sa.column("memory_mb", sa.Integer),
)


def upgrade():
    op.execute(_flavors.update()
               .where(_flavors.c.flavorid == "42", _flavors.c.name == "m1.nano",
                      _flavors.c.memory_mb == 64)
               .values(memory_mb=NANO_MEMORY_MB))
