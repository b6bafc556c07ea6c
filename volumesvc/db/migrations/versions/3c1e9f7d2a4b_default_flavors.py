"""Insert the default flavors (Nova's m1.* plus m1.nano for the all-in-one).

Revision ID: 3c1e9f7d2a4b
Revises: b5a2a0d3e1f0
Create Date: 2025-11-29

NOTE: the all-in-one boots real QEMU domains under software emulation, where
m1.nano (id "42", 64 MiB, like devstack's) is the only size that stays fast.
"""

import datetime
import json

import sqlalchemy as sa
from alembic import op

revision = "3c1e9f7d2a4b"
down_revision = "b5a2a0d3e1f0"
branch_labels = None
depends_on = None

# (flavorid, name, memory_mb, vcpus, root_gb)
DEFAULT_FLAVORS = (
    ("1", "m1.tiny", 512, 1, 1),
    ("2", "m1.small", 2048, 1, 20),
    ("3", "m1.medium", 4096, 2, 40),
    ("4", "m1.large", 8192, 4, 80),
    ("5", "m1.xlarge", 16384, 8, 160),
    ("42", "m1.nano", 64, 1, 1),
)

# A frozen copy of the columns this revision writes, not models.Flavor.
_flavors = sa.table(
    "flavors",
    sa.column("flavorid", sa.String), sa.column("name", sa.String),
    sa.column("memory_mb", sa.Integer), sa.column("vcpus", sa.Integer),
    sa.column("root_gb", sa.Integer), sa.column("ephemeral_gb", sa.Integer),
    sa.column("swap", sa.Integer), sa.column("rxtx_factor", sa.Float),
    sa.column("is_public", sa.Boolean), sa.column("disabled", sa.Boolean),
    sa.column("extra_specs", sa.Text), sa.column("created_at", sa.DateTime),
)


def upgrade():
    # NOTE: created_at comes from Python (naive UTC, like the models), not
    # the server clock whose time zone differs between backends.
    created = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    op.bulk_insert(_flavors, [
        {"flavorid": flavorid, "name": name, "memory_mb": memory_mb, "vcpus": vcpus,
         "root_gb": root_gb, "ephemeral_gb": 0, "swap": 0, "rxtx_factor": 1.0,
         "is_public": True, "disabled": False, "extra_specs": json.dumps({}),
         "created_at": created}
        for flavorid, name, memory_mb, vcpus, root_gb in DEFAULT_FLAVORS
    ])
