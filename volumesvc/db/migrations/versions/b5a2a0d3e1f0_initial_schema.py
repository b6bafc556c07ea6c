"""Initial schema: services, instances, BDMs, actions, faults, flavors.

Revision ID: b5a2a0d3e1f0
Revises:
Create Date: 2025-11-29

NOTE: the tables are written out rather than created from models.py so this
revision stays frozen while the models move on; test_migrations.py checks
that the two still agree at head.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "b5a2a0d3e1f0"
down_revision = None
branch_labels = None
depends_on = None

MediumText = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _timestamps():
    return [sa.Column("created_at", DateTime, nullable=True),
            sa.Column("updated_at", DateTime, nullable=True)]


def _soft_delete():
    return [sa.Column("deleted_at", DateTime, nullable=True),
            sa.Column("deleted", sa.Integer(), server_default=sa.text("0"), nullable=False)]


def _str(name, length=255, nullable=True):
    return sa.Column(name, sa.String(length), nullable=nullable)


def upgrade():
    op.create_table(
        "services",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("uuid", 36, nullable=False),
        _str("host", nullable=False),
        _str("binary", nullable=False),
        _str("topic"),
        sa.Column("report_count", sa.Integer(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        _str("disabled_reason"),
        sa.Column("forced_down", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("capabilities", sa.Text(), nullable=True),
        sa.Column("last_seen_up", DateTime, nullable=True),
        _str("availability_zone", nullable=False),
        *_timestamps(), *_soft_delete(),
        sa.UniqueConstraint("host", "binary", "deleted",
                            name="uniq_services0host0binary0deleted"),
        sa.UniqueConstraint("uuid", name="uniq_services0uuid"),
        sa.PrimaryKeyConstraint("id", name="pk_services"),
    )

    op.create_table(
        "instances",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("uuid", 36, nullable=False),
        _str("project_id"), _str("user_id"), _str("display_name"),
        sa.Column("display_description", sa.Text(), nullable=True),
        _str("hostname"), _str("host"), _str("node"), _str("availability_zone"),
        _str("vm_state"), _str("task_state"),
        sa.Column("power_state", sa.Integer(), nullable=True),
        sa.Column("flavor_id", sa.Integer(), nullable=True),
        sa.Column("flavor", sa.Text(), nullable=True),
        _str("image_ref"), _str("root_device_name"),
        sa.Column("launched_at", DateTime, nullable=True),
        sa.Column("terminated_at", DateTime, nullable=True),
        sa.Column("locked", sa.Boolean(), nullable=False),
        _str("locked_by"), _str("locked_reason"), _str("key_name"),
        sa.Column("metadata", sa.Text(), nullable=True),
        _str("config_drive"), _str("reservation_id"),
        sa.Column("launch_index", sa.Integer(), nullable=True),
        _str("access_ip_v4", 39), _str("access_ip_v6", 39),
        sa.Column("user_data", MediumText, nullable=True),
        sa.Column("tags", sa.Text(), nullable=True),
        sa.Column("progress", sa.Integer(), nullable=True),
        _str("instance_name"),
        *_timestamps(), *_soft_delete(),
        sa.UniqueConstraint("uuid", name="uniq_instances0uuid"),
        sa.PrimaryKeyConstraint("id", name="pk_instances"),
    )
    op.create_index("instances_project_id_deleted_idx", "instances",
                    ["project_id", "deleted"])
    op.create_index("instances_host_node_deleted_idx", "instances",
                    ["host", "node", "deleted"])
    op.create_index("instances_deleted_created_at_idx", "instances",
                    ["deleted", "created_at"])

    op.create_table(
        "block_device_mappings",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("uuid", 36, nullable=False),
        _str("instance_uuid", 36, nullable=False),
        _str("source_type"), _str("destination_type"),
        sa.Column("boot_index", sa.Integer(), nullable=True),
        _str("device_name"), _str("device_type"), _str("disk_bus"), _str("guest_format"),
        _str("volume_id", 36), _str("snapshot_id", 36), _str("image_id", 36),
        sa.Column("volume_size", sa.Integer(), nullable=True),
        _str("volume_type"),
        _str("attachment_id", 36),
        sa.Column("connection_info", MediumText, nullable=True),
        sa.Column("delete_on_termination", sa.Boolean(), nullable=False),
        sa.Column("no_device", sa.Boolean(), nullable=False),
        _str("tag"),
        *_timestamps(), *_soft_delete(),
        sa.ForeignKeyConstraint(["instance_uuid"], ["instances.uuid"],
                                name="fk_block_device_mappings_instance_uuid_instances"),
        sa.UniqueConstraint("uuid", name="uniq_block_device_mappings0uuid"),
        sa.PrimaryKeyConstraint("id", name="pk_block_device_mappings"),
    )
    op.create_index("block_device_mappings_instance_uuid_idx", "block_device_mappings",
                    ["instance_uuid"])
    op.create_index("block_device_mappings_volume_id_idx", "block_device_mappings",
                    ["volume_id"])

    op.create_table(
        "instance_actions",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("action"),
        _str("instance_uuid", 36, nullable=False),
        _str("request_id"), _str("user_id"), _str("project_id"),
        sa.Column("start_time", DateTime, nullable=True),
        sa.Column("finish_time", DateTime, nullable=True),
        _str("message"),
        *_timestamps(),
        sa.ForeignKeyConstraint(["instance_uuid"], ["instances.uuid"],
                                name="fk_instance_actions_instance_uuid_instances"),
        sa.PrimaryKeyConstraint("id", name="pk_instance_actions"),
    )
    op.create_index("instance_uuid_request_id_idx", "instance_actions",
                    ["instance_uuid", "request_id"])

    op.create_table(
        "instance_actions_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("event"),
        sa.Column("action_id", sa.Integer(), nullable=False),
        sa.Column("start_time", DateTime, nullable=True),
        sa.Column("finish_time", DateTime, nullable=True),
        _str("result"),
        sa.Column("traceback", sa.Text(), nullable=True),
        _str("host"),
        sa.Column("details", sa.Text(), nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(["action_id"], ["instance_actions.id"],
                                name="fk_instance_actions_events_action_id_instance_actions"),
        sa.PrimaryKeyConstraint("id", name="pk_instance_actions_events"),
    )

    op.create_table(
        "instance_faults",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("instance_uuid", 36, nullable=False),
        sa.Column("code", sa.Integer(), nullable=False),
        _str("message"),
        sa.Column("details", MediumText, nullable=True),
        _str("host"),
        *_timestamps(),
        sa.ForeignKeyConstraint(["instance_uuid"], ["instances.uuid"],
                                name="fk_instance_faults_instance_uuid_instances"),
        sa.PrimaryKeyConstraint("id", name="pk_instance_faults"),
    )
    op.create_index("instance_faults_instance_uuid_created_at_idx", "instance_faults",
                    ["instance_uuid", "created_at"])

    op.create_table(
        "flavors",
        sa.Column("id", sa.Integer(), primary_key=True),
        _str("flavorid", nullable=False),
        _str("name", nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("vcpus", sa.Integer(), nullable=False),
        sa.Column("root_gb", sa.Integer(), nullable=False),
        sa.Column("ephemeral_gb", sa.Integer(), nullable=False),
        sa.Column("swap", sa.Integer(), nullable=False),
        sa.Column("rxtx_factor", sa.Float(), nullable=False),
        sa.Column("is_public", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("extra_specs", sa.Text(), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("flavorid", name="uniq_flavors0flavorid"),
        sa.UniqueConstraint("name", name="uniq_flavors0name"),
        sa.PrimaryKeyConstraint("id", name="pk_flavors"),
    )
