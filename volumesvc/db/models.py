"""SQLAlchemy 2.x typed models: the schema alembic migrations must reproduce.

``tests/functional/db/test_migrations.py`` compares this metadata with the
result of running every migration, on SQLite, PostgreSQL and MariaDB, so a
column added here without a migration (or the reverse) fails the tests.
"""

import datetime
import json

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import Mapped, mapped_column

# NOTE: explicit constraint names make migrations identical on every backend
# and let a later migration drop a constraint by name.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uniq_%(table_name)s0%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Nova stores user data and connection info in MEDIUMTEXT on MySQL: TEXT's
# 64 KiB is too small for base64 user data or multipath connection info.
MediumText = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")

# NOTE: MySQL's DATETIME drops microseconds unless asked for them; without
# fsp=6 a value read back differs from the one written and same-second
# events cannot be ordered by time.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


class JSONEncoded(sa.types.TypeDecorator):
    """A JSON document stored as text.

    NOTE: not ``sa.JSON``: MariaDB reflects JSON as LONGTEXT and SQLite has no
    JSON type, so a text column keeps the schema (and the model/migration
    comparison) identical on all backends. We never query inside the JSON.
    """

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else json.dumps(value, sort_keys=True)

    def process_result_value(self, value, dialect):
        return None if value is None else json.loads(value)


def utcnow() -> datetime.datetime:
    """Naive UTC now, the convention of every datetime column."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


class Base(orm.DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime.datetime: DateTime}


class TimestampMixin:
    created_at: Mapped[datetime.datetime | None] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(onupdate=utcnow)


class SoftDeleteMixin:
    """Nova's soft delete: ``deleted`` is 0 while live and the row id once deleted.

    NOTE: using the id (not a boolean) lets unique constraints include
    ``deleted``, so a host may re-register a service after the old row was
    deleted without a collision between two deleted rows.
    """

    deleted_at: Mapped[datetime.datetime | None]
    deleted: Mapped[int] = mapped_column(default=0, server_default=sa.text("0"))


class Service(Base, TimestampMixin, SoftDeleteMixin):
    __tablename__ = "services"
    __table_args__ = (
        sa.UniqueConstraint("host", "binary", "deleted",
                            name="uniq_services0host0binary0deleted"),
        sa.UniqueConstraint("uuid"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36))
    host: Mapped[str] = mapped_column(sa.String(255))
    binary: Mapped[str] = mapped_column(sa.String(255))
    topic: Mapped[str | None] = mapped_column(sa.String(255))
    report_count: Mapped[int] = mapped_column(default=0)
    disabled: Mapped[bool] = mapped_column(default=False)
    disabled_reason: Mapped[str | None] = mapped_column(sa.String(255))
    forced_down: Mapped[bool] = mapped_column(default=False)
    version: Mapped[int] = mapped_column(default=0)
    capabilities: Mapped[dict | None] = mapped_column(JSONEncoded)
    last_seen_up: Mapped[datetime.datetime | None]
    availability_zone: Mapped[str] = mapped_column(sa.String(255), default="nova")


class Instance(Base, TimestampMixin, SoftDeleteMixin):
    __tablename__ = "instances"
    __table_args__ = (
        sa.UniqueConstraint("uuid"),
        sa.Index("instances_project_id_deleted_idx", "project_id", "deleted"),
        sa.Index("instances_host_node_deleted_idx", "host", "node", "deleted"),
        sa.Index("instances_deleted_created_at_idx", "deleted", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36))
    project_id: Mapped[str | None] = mapped_column(sa.String(255))
    user_id: Mapped[str | None] = mapped_column(sa.String(255))
    display_name: Mapped[str | None] = mapped_column(sa.String(255))
    display_description: Mapped[str | None] = mapped_column(sa.Text)
    hostname: Mapped[str | None] = mapped_column(sa.String(255))
    host: Mapped[str | None] = mapped_column(sa.String(255))
    node: Mapped[str | None] = mapped_column(sa.String(255))
    availability_zone: Mapped[str | None] = mapped_column(sa.String(255))
    vm_state: Mapped[str | None] = mapped_column(sa.String(255))
    task_state: Mapped[str | None] = mapped_column(sa.String(255))
    power_state: Mapped[int | None]
    # NOTE: flavor_id is the flavors.id the instance was booted with, without
    # a foreign key: the flavor may be deleted later, and ``flavor`` keeps
    # the copy the instance actually runs with.
    flavor_id: Mapped[int | None]
    flavor: Mapped[dict | None] = mapped_column(JSONEncoded)
    image_ref: Mapped[str | None] = mapped_column(sa.String(255))
    # The boot image's properties as they were at boot (API 2.98), for
    # image-backed servers only.
    image_properties: Mapped[dict | None] = mapped_column(JSONEncoded)
    root_device_name: Mapped[str | None] = mapped_column(sa.String(255))
    launched_at: Mapped[datetime.datetime | None]
    terminated_at: Mapped[datetime.datetime | None]
    locked: Mapped[bool] = mapped_column(default=False)
    locked_by: Mapped[str | None] = mapped_column(sa.String(255))
    locked_reason: Mapped[str | None] = mapped_column(sa.String(255))
    key_name: Mapped[str | None] = mapped_column(sa.String(255))
    # The key pair's public key as it was when named (boot, 2.54 rebuild):
    # what the config drive gives the guest (computes read no key pairs).
    key_data: Mapped[str | None] = mapped_column(MediumText)
    # NOTE: ``metadata`` is reserved on declarative classes.
    metadata_: Mapped[dict | None] = mapped_column("metadata", JSONEncoded)
    config_drive: Mapped[str | None] = mapped_column(sa.String(255))
    reservation_id: Mapped[str | None] = mapped_column(sa.String(255))
    launch_index: Mapped[int | None]
    access_ip_v4: Mapped[str | None] = mapped_column(sa.String(39))
    access_ip_v6: Mapped[str | None] = mapped_column(sa.String(39))
    user_data: Mapped[str | None] = mapped_column(MediumText)
    progress: Mapped[int | None]
    instance_name: Mapped[str | None] = mapped_column(sa.String(255))


class Tag(Base):
    """One tag of one server (API 2.26): a row per tag so lists filter in SQL.

    The primary key makes adding a tag that is already there a no-op that
    cannot race into a duplicate; ``tags_tag_idx`` serves the ``tags`` and
    ``not-tags`` filters of the server list.
    """

    __tablename__ = "tags"
    __table_args__ = (sa.Index("tags_tag_idx", "tag"),)

    resource_id: Mapped[str] = mapped_column(
        sa.String(36), sa.ForeignKey("instances.uuid"), primary_key=True)
    tag: Mapped[str] = mapped_column(sa.String(80), primary_key=True)


class BlockDeviceMapping(Base, TimestampMixin, SoftDeleteMixin):
    __tablename__ = "block_device_mappings"
    __table_args__ = (
        sa.UniqueConstraint("uuid"),
        sa.Index("block_device_mappings_instance_uuid_idx", "instance_uuid"),
        sa.Index("block_device_mappings_volume_id_idx", "volume_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36))
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), sa.ForeignKey("instances.uuid"))
    source_type: Mapped[str | None] = mapped_column(sa.String(255))
    destination_type: Mapped[str | None] = mapped_column(sa.String(255))
    boot_index: Mapped[int | None]
    device_name: Mapped[str | None] = mapped_column(sa.String(255))
    device_type: Mapped[str | None] = mapped_column(sa.String(255))
    disk_bus: Mapped[str | None] = mapped_column(sa.String(255))
    guest_format: Mapped[str | None] = mapped_column(sa.String(255))
    volume_id: Mapped[str | None] = mapped_column(sa.String(36))
    snapshot_id: Mapped[str | None] = mapped_column(sa.String(36))
    image_id: Mapped[str | None] = mapped_column(sa.String(36))
    volume_size: Mapped[int | None]
    volume_type: Mapped[str | None] = mapped_column(sa.String(255))
    attachment_id: Mapped[str | None] = mapped_column(sa.String(36))
    connection_info: Mapped[str | None] = mapped_column(MediumText)
    delete_on_termination: Mapped[bool] = mapped_column(default=False)
    no_device: Mapped[bool] = mapped_column(default=False)
    tag: Mapped[str | None] = mapped_column(sa.String(255))
    # API 2.106 (objects/attachment_status.py): NULL is a pre-2.106 writer.
    attach_status: Mapped[str | None] = mapped_column(sa.String(16))
    fault_code: Mapped[int | None]
    fault_message: Mapped[str | None] = mapped_column(sa.Text)
    fault_at: Mapped[datetime.datetime | None]
    # API 2.108: the guest has the volume read-only (the Cinder attachment's
    # mode is ``ro``); every new attachment for this BDM asks for it again.
    read_only: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    # API 2.107: the device the attach request named, a hint the compute may
    # not have followed; a retry naming it again is the same request.
    requested_device: Mapped[str | None] = mapped_column(sa.String(255))


class Migration(Base, TimestampMixin):
    """One move of a server between hosts (live migration first), as Nova records it.

    What ``os-migrations`` and ``servers/{id}/migrations`` show, and what a
    move that a process died in is resumed or undone from: the destination's
    Cinder attachments are kept here (``dest_attachments``, volume id →
    attachment id) from the moment each is made until the move has settled,
    so no attachment of the destination is ever known only to Cinder.
    Archived with its server (the foreign key).
    """

    __tablename__ = "migrations"
    __table_args__ = (
        sa.UniqueConstraint("uuid"),
        sa.Index("migrations_instance_uuid_status_idx", "instance_uuid", "status"),
        sa.Index("migrations_status_updated_at_idx", "status", "updated_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36))
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), sa.ForeignKey("instances.uuid"))
    migration_type: Mapped[str] = mapped_column(sa.String(32))
    status: Mapped[str] = mapped_column(sa.String(32))
    source_compute: Mapped[str | None] = mapped_column(sa.String(255))
    source_node: Mapped[str | None] = mapped_column(sa.String(255))
    dest_compute: Mapped[str | None] = mapped_column(sa.String(255))
    dest_node: Mapped[str | None] = mapped_column(sa.String(255))
    dest_host: Mapped[str | None] = mapped_column(sa.String(255))
    old_instance_type_id: Mapped[int | None]
    new_instance_type_id: Mapped[int | None]
    memory_total: Mapped[int | None] = mapped_column(sa.BigInteger)
    memory_processed: Mapped[int | None] = mapped_column(sa.BigInteger)
    memory_remaining: Mapped[int | None] = mapped_column(sa.BigInteger)
    disk_total: Mapped[int | None] = mapped_column(sa.BigInteger)
    disk_processed: Mapped[int | None] = mapped_column(sa.BigInteger)
    disk_remaining: Mapped[int | None] = mapped_column(sa.BigInteger)
    user_id: Mapped[str | None] = mapped_column(sa.String(255))
    project_id: Mapped[str | None] = mapped_column(sa.String(255))
    # What the user asked of a running move (``abort``, ``force-complete``):
    # the source compute's monitor reads it between two progress reports.
    requested: Mapped[str | None] = mapped_column(sa.String(32))
    dest_attachments: Mapped[dict | None] = mapped_column(JSONEncoded)
    # volume id → the destination's connection info, once it connected them:
    # what a move resumed after a SIGKILL finishes or undoes with.
    dest_connections: Mapped[dict | None] = mapped_column(JSONEncoded)
    # A resize's flavors as the server had them (revert and confirm need
    # them even when a flavor was deleted meanwhile).
    old_flavor: Mapped[dict | None] = mapped_column(JSONEncoded)
    new_flavor: Mapped[dict | None] = mapped_column(JSONEncoded)
    # volume id → the source's connection info, for the host to drop when it
    # is back (an evacuation: the BDMs name the new host's by then).
    source_connections: Mapped[dict | None] = mapped_column(JSONEncoded)
    # What the admin asked beyond the hosts (``force``, an evacuation's
    # ``target_state``): a conductor that drives the move again reads them.
    request_options: Mapped[dict | None] = mapped_column(JSONEncoded)


class InstanceAction(Base, TimestampMixin):
    __tablename__ = "instance_actions"
    __table_args__ = (
        sa.Index("instance_uuid_request_id_idx", "instance_uuid", "request_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    action: Mapped[str | None] = mapped_column(sa.String(255))
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), sa.ForeignKey("instances.uuid"))
    request_id: Mapped[str | None] = mapped_column(sa.String(255))
    user_id: Mapped[str | None] = mapped_column(sa.String(255))
    project_id: Mapped[str | None] = mapped_column(sa.String(255))
    start_time: Mapped[datetime.datetime | None]
    finish_time: Mapped[datetime.datetime | None]
    message: Mapped[str | None] = mapped_column(sa.String(255))


class InstanceActionEvent(Base, TimestampMixin):
    __tablename__ = "instance_actions_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    event: Mapped[str | None] = mapped_column(sa.String(255))
    action_id: Mapped[int] = mapped_column(sa.ForeignKey("instance_actions.id"))
    start_time: Mapped[datetime.datetime | None]
    finish_time: Mapped[datetime.datetime | None]
    result: Mapped[str | None] = mapped_column(sa.String(255))
    traceback: Mapped[str | None] = mapped_column(sa.Text)
    host: Mapped[str | None] = mapped_column(sa.String(255))
    details: Mapped[str | None] = mapped_column(sa.Text)


class InstanceFault(Base, TimestampMixin):
    __tablename__ = "instance_faults"
    __table_args__ = (
        sa.Index("instance_faults_instance_uuid_created_at_idx", "instance_uuid", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    instance_uuid: Mapped[str] = mapped_column(sa.String(36), sa.ForeignKey("instances.uuid"))
    code: Mapped[int]
    message: Mapped[str | None] = mapped_column(sa.String(255))
    details: Mapped[str | None] = mapped_column(MediumText)
    host: Mapped[str | None] = mapped_column(sa.String(255))


class Flavor(Base, TimestampMixin):
    __tablename__ = "flavors"
    __table_args__ = (
        sa.UniqueConstraint("flavorid"),
        sa.UniqueConstraint("name"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    flavorid: Mapped[str] = mapped_column(sa.String(255))
    name: Mapped[str] = mapped_column(sa.String(255))
    memory_mb: Mapped[int]
    vcpus: Mapped[int]
    root_gb: Mapped[int] = mapped_column(default=0)
    ephemeral_gb: Mapped[int] = mapped_column(default=0)
    swap: Mapped[int] = mapped_column(default=0)
    rxtx_factor: Mapped[float] = mapped_column(sa.Float, default=1.0)
    is_public: Mapped[bool] = mapped_column(default=True)
    disabled: Mapped[bool] = mapped_column(default=False)
    description: Mapped[str | None] = mapped_column(sa.Text)
    extra_specs: Mapped[dict | None] = mapped_column(JSONEncoded)


class KeyPair(Base, TimestampMixin):
    """A user's SSH or X.509 public key (hard-deleted, as in Nova's API database)."""

    __tablename__ = "key_pairs"
    __table_args__ = (sa.UniqueConstraint("user_id", "name", name="uniq_key_pairs0user_id0name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(255))
    user_id: Mapped[str] = mapped_column(sa.String(255))
    fingerprint: Mapped[str | None] = mapped_column(sa.String(255))
    public_key: Mapped[str | None] = mapped_column(sa.Text)
    type: Mapped[str] = mapped_column(sa.String(16), default="ssh")


class Quota(Base, TimestampMixin):
    """A project's limit for one resource; no row means the configured default."""

    __tablename__ = "quotas"
    __table_args__ = (sa.UniqueConstraint("project_id", "resource",
                                          name="uniq_quotas0project_id0resource"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[str] = mapped_column(sa.String(255))
    resource: Mapped[str] = mapped_column(sa.String(255))
    hard_limit: Mapped[int]


class ProjectUserQuota(Base, TimestampMixin):
    """One user's limit for one resource inside a project (at most the project's)."""

    __tablename__ = "project_user_quotas"
    __table_args__ = (sa.UniqueConstraint(
        "project_id", "user_id", "resource",
        name="uniq_project_user_quotas0project_id0user_id0resource"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[str] = mapped_column(sa.String(255))
    user_id: Mapped[str] = mapped_column(sa.String(255))
    resource: Mapped[str] = mapped_column(sa.String(255))
    hard_limit: Mapped[int]


class QuotaLock(Base):
    """One row per project, locked (SELECT ... FOR UPDATE) while its usage is checked.

    Why a row of its own: the count of a project's instances and the insert
    of new ones must not interleave with another boot of the same project,
    or two boots that each see room both go through (see
    ``volumesvc/quota.py``). The row exists only to be locked.
    """

    __tablename__ = "quota_locks"

    project_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True)


class VolumeRequest(Base):
    """An accepted attach or detach (API 2.101+) until a conductor has settled it.

    Why a row: the API answers 202 once the request is cast, and the bus
    forgets a message as soon as a conductor takes it, so a conductor that
    dies mid-task (or a cast that never arrives) would lose the request.
    The conductor that runs it claims the row (``claimed_by``/``claimed_at``,
    a compare and swap) and deletes it when the work has settled; any
    conductor re-runs a row that nobody claimed in time or whose claimer is
    gone (``volumesvc/conductor/volume_requests.py``). Hard-deleted: a row
    is only the memory of work still owed.
    """

    __tablename__ = "volume_requests"
    __table_args__ = (
        sa.UniqueConstraint("uuid"),
        sa.Index("volume_requests_claimed_by_created_at_idx", "claimed_by", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36))
    kind: Mapped[str] = mapped_column(sa.String(16))
    instance_uuid: Mapped[str] = mapped_column(sa.String(36))
    volume_id: Mapped[str] = mapped_column(sa.String(36))
    # The keyword arguments of the conductor cast, and the request's context
    # without its tokens (a replay acts as the service for that user).
    params: Mapped[dict | None] = mapped_column(JSONEncoded)
    context: Mapped[dict | None] = mapped_column(JSONEncoded)
    created_at: Mapped[datetime.datetime | None] = mapped_column(default=utcnow)
    claimed_by: Mapped[str | None] = mapped_column(sa.String(255))
    claimed_at: Mapped[datetime.datetime | None]
    attempts: Mapped[int] = mapped_column(default=0, server_default=sa.text("0"))


# -- Archive ------------------------------------------------------------------
# ``volumesvc-manage db archive_deleted_rows`` moves soft-deleted rows, with
# every row that refers to them by foreign key (a server's BDMs, tags,
# actions and their events, faults), into ``shadow_<table>`` tables of the
# same columns; ``db purge`` deletes from those. A shadow table has the
# columns and primary key of its table and nothing else: no foreign key
# (a row's parent may be purged first), no unique constraint (a soft-deleted
# row's uniqueness no longer matters), no defaults (rows come in whole).
# Declared here from the tables themselves, so a column added to an archived
# table without its shadow twin fails the model/migration comparison.
SHADOW_PREFIX = "shadow_"

# The soft-deletable tables: their rows with ``deleted != 0`` are archived.
SOFT_DELETE_TABLES = ("instances", "block_device_mappings", "services")


def _referring_tables(names):
    """``names`` and every table that refers to one of them, transitively."""
    found = list(names)
    for table in Base.metadata.sorted_tables:
        if any(fk.column.table.name in found for fk in table.foreign_keys) \
                and table.name not in found:
            found.append(table.name)
    return tuple(found)


# sorted_tables lists a parent before its children, so one pass finds them all.
ARCHIVED_TABLES = _referring_tables(SOFT_DELETE_TABLES)


def _shadow_of(table: sa.Table) -> sa.Table:
    columns = [sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable,
                         autoincrement=False) for c in table.columns]
    return sa.Table(SHADOW_PREFIX + table.name, Base.metadata, *columns)


SHADOW_TABLES = {name: _shadow_of(Base.metadata.tables[name]) for name in ARCHIVED_TABLES}
