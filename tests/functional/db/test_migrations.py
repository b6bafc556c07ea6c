"""Walk every alembic revision and compare the result with models.py.

Each revision may have ``_pre_upgrade_<rev>(connection)`` (seed data, whose
return value is handed on) and ``_check_<rev>(connection, data)`` hooks on
:class:`MigrationHooks`. Runs on SQLite always and on the local PostgreSQL
and MariaDB servers (markers ``postgresql`` / ``mysql``), each in a
database of its own that is dropped afterwards.
"""

import contextlib
import datetime
import os

import pytest
import sqlalchemy as sa
from alembic import autogenerate
from alembic import migration as alembic_migration
from oslo_db import exception as db_exc

from tests.fixtures import database as db_fixtures
from tests.functional.db import conftest
from volumesvc.db import api as db_api
from volumesvc.db import migration, models


@contextlib.contextmanager
def _empty_database(backend, tmp_path):
    """A Database on an empty schema of ``backend`` (nothing migrated yet)."""
    conf = conftest.make_conf(tmp_path)
    if backend == "sqlite":
        conf.set_override("connection", db_fixtures.sqlite_url(str(tmp_path)), group="database")
        database = db_api.Database(conf)
        try:
            yield database
        finally:
            database.dispose()
        return
    with db_fixtures.provisioned_url(backend) as url:
        conf.set_override("connection", url, group="database")
        database = db_api.Database(conf)
        try:
            yield database
        finally:
            database.dispose()


class MigrationHooks:
    """Per-revision data checks; a revision without hooks is only applied."""

    def _check_b5a2a0d3e1f0(self, connection, data):
        inspector = sa.inspect(connection)
        tables = set(inspector.get_table_names())
        assert {"services", "instances", "block_device_mappings", "instance_actions",
                "instance_actions_events", "instance_faults", "flavors"} <= tables
        bdm_columns = {c["name"] for c in inspector.get_columns("block_device_mappings")}
        assert {"volume_type", "attachment_id", "connection_info"} <= bdm_columns
        # Soft-deleted duplicates of a service may coexist with a live one.
        services = sa.table("services", *(sa.column(n) for n in (
            "uuid", "host", "binary", "report_count", "disabled", "forced_down",
            "version", "availability_zone", "deleted")))
        row = {"host": "h", "binary": "volumesvc-compute", "report_count": 0,
               "disabled": False, "forced_down": False, "version": 1,
               "availability_zone": "nova"}
        connection.execute(services.insert(), [
            dict(row, uuid="u1", deleted=1), dict(row, uuid="u2", deleted=2),
            dict(row, uuid="u3", deleted=0)])
        with pytest.raises((db_exc.DBDuplicateEntry, sa.exc.IntegrityError)):
            with connection.begin_nested():
                connection.execute(services.insert(), dict(row, uuid="u4", deleted=0))
        connection.execute(services.delete())

    def _pre_upgrade_3c1e9f7d2a4b(self, connection):
        return connection.execute(sa.text("SELECT COUNT(*) FROM flavors")).scalar()

    def _check_3c1e9f7d2a4b(self, connection, data):
        assert data == 0
        rows = connection.execute(sa.text(
            "SELECT flavorid, name, memory_mb, vcpus, root_gb FROM flavors")).all()
        by_id = {row.flavorid: tuple(row[1:]) for row in rows}
        assert by_id["1"] == ("m1.tiny", 512, 1, 1)
        assert by_id["5"] == ("m1.xlarge", 16384, 8, 160)
        assert by_id["42"] == ("m1.nano", 64, 1, 1)
        assert set(by_id) == db_fixtures.DEFAULT_FLAVORIDS

    @staticmethod
    def _old_bdm(connection, suffix):
        """An instance ``i-<suffix>`` with a volume BDM ``b-<suffix>`` of the columns of old."""
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, locked, deleted) VALUES (:i, :f, 0)"),
            {"i": f"i-{suffix}", "f": False})
        connection.execute(sa.text(
            "INSERT INTO block_device_mappings (uuid, instance_uuid, volume_id, "
            "delete_on_termination, no_device, deleted) "
            "VALUES (:b, :i, :v, :f, :f, 0)"),
            {"b": f"b-{suffix}", "i": f"i-{suffix}", "v": f"v-{suffix}", "f": False})

    def _pre_upgrade_7a4d2c9e5b13(self, connection):
        """A BDM written before 2.106: it must come out with no status (shown attached)."""
        self._old_bdm(connection, "106")

    def _check_7a4d2c9e5b13(self, connection, data):
        row = connection.execute(sa.text(
            "SELECT attach_status, fault_code, fault_message, fault_at "
            "FROM block_device_mappings WHERE uuid = 'b-106'")).one()
        assert tuple(row) == (None, None, None, None)
        connection.execute(sa.text(
            "UPDATE block_device_mappings SET attach_status = 'error', fault_code = 500, "
            "fault_message = :m, fault_at = :t WHERE uuid = 'b-106'"),
            {"m": "x" * 4000, "t": datetime.datetime(2026, 11, 30, 19, 0, 0, 123456)})
        fault_at = connection.execute(sa.text(
            "SELECT fault_at FROM block_device_mappings WHERE uuid = 'b-106'")).scalar()
        assert str(fault_at).endswith(".123456")  # MariaDB keeps microseconds (fsp=6)
        connection.execute(sa.text("DELETE FROM block_device_mappings"))
        connection.execute(sa.text("DELETE FROM instances"))

    def _pre_upgrade_5e8b1c4f9a27(self, connection):
        """Tags written into instances.tags before the tags table: they are copied over."""
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, locked, deleted, tags) VALUES "
            "('i-tags', :f, 0, :t), ('i-none', :f, 0, NULL), ('i-empty', :f, 0, '[]')"),
            {"f": False, "t": '["blue", "red", "blue"]'})

    def _check_5e8b1c4f9a27(self, connection, data):
        rows = connection.execute(sa.text(
            "SELECT resource_id, tag FROM tags ORDER BY resource_id, tag")).all()
        assert [tuple(row) for row in rows] == [("i-tags", "blue"), ("i-tags", "red")]
        with pytest.raises((db_exc.DBDuplicateEntry, sa.exc.IntegrityError)):
            with connection.begin_nested():
                connection.execute(sa.text(
                    "INSERT INTO tags (resource_id, tag) VALUES ('i-tags', 'red')"))
        connection.execute(sa.text("DELETE FROM tags"))
        connection.execute(sa.text("DELETE FROM instances"))

    def _check_d7e2f5a9c8b1(self, connection, data):
        """volume_requests: a request uuid is recorded once; attempts start at 0."""
        connection.execute(sa.text(
            "INSERT INTO volume_requests (uuid, kind, instance_uuid, volume_id) "
            "VALUES ('r-1', 'attach', 'i-1', 'v-1')"))
        assert connection.execute(sa.text(
            "SELECT attempts, claimed_by FROM volume_requests")).one() == (0, None)
        with pytest.raises((db_exc.DBDuplicateEntry, sa.exc.IntegrityError)):
            with connection.begin_nested():
                connection.execute(sa.text(
                    "INSERT INTO volume_requests (uuid, kind, instance_uuid, volume_id) "
                    "VALUES ('r-1', 'detach', 'i-1', 'v-1')"))
        connection.execute(sa.text("DELETE FROM volume_requests"))

    def _pre_upgrade_f3a9d2c7b418(self, connection):
        """A server booted before key_data: it keeps its key name and has no key."""
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, locked, deleted, key_name) "
            "VALUES ('i-old-key', :f, 0, 'k')"), {"f": False})

    def _check_f3a9d2c7b418(self, connection, data):
        """key_data is NULL for old rows and holds a key far over 64 KiB (MEDIUMTEXT)."""
        assert tuple(connection.execute(sa.text(
            "SELECT key_name, key_data FROM instances WHERE uuid = 'i-old-key'")).one()) \
            == ("k", None)
        key = "ssh-rsa " + "A" * 70000
        connection.execute(sa.text(
            "UPDATE instances SET key_data = :k WHERE uuid = 'i-old-key'"), {"k": key})
        assert connection.execute(sa.text(
            "SELECT key_data FROM instances WHERE uuid = 'i-old-key'")).scalar() == key
        connection.execute(sa.text("DELETE FROM instances"))

    def _check_a8c3e6f1b290(self, connection, data):
        """Each shadow table has its table's columns, types and key, and nothing else."""
        inspector = sa.inspect(connection)
        for name in ("instances", "block_device_mappings", "services", "tags",
                     "instance_actions", "instance_actions_events", "instance_faults"):
            def columns(table):
                return [(c["name"], str(c["type"]), c["nullable"])
                        for c in inspector.get_columns(table)]
            assert columns(f"shadow_{name}") == columns(name), name
            assert (inspector.get_pk_constraint(f"shadow_{name}")["constrained_columns"]
                    == inspector.get_pk_constraint(name)["constrained_columns"]), name
            assert inspector.get_foreign_keys(f"shadow_{name}") == [], name
            assert inspector.get_unique_constraints(f"shadow_{name}") == [], name

    def _pre_upgrade_6d2f8b3e1c57(self, connection):
        """An operator's own flavor of 64 MiB next to m1.nano: only m1.nano grows."""
        connection.execute(sa.text(
            "INSERT INTO flavors (flavorid, name, memory_mb, vcpus, root_gb, ephemeral_gb, "
            "swap, rxtx_factor, is_public, disabled, extra_specs) "
            "VALUES ('own', 'own.nano', 64, 1, 1, 0, 0, 1.0, :t, :f, '{}')"),
            {"t": True, "f": False})

    def _check_6d2f8b3e1c57(self, connection, data):
        rows = dict(connection.execute(sa.text(
            "SELECT flavorid, memory_mb FROM flavors WHERE flavorid IN ('42', 'own')")).all())
        assert rows == {"42": 128, "own": 64}
        connection.execute(sa.text("DELETE FROM flavors WHERE flavorid = 'own'"))

    def _pre_upgrade_e3a9b6d1f4c7(self, connection):
        """A BDM written before 2.108: it comes out read-write."""
        self._old_bdm(connection, "108")

    def _check_e3a9b6d1f4c7(self, connection, data):
        def read_only():
            return connection.execute(sa.text(
                "SELECT read_only FROM block_device_mappings WHERE uuid = 'b-108'")).scalar()

        assert read_only() in (False, 0)
        connection.execute(sa.text(
            "UPDATE block_device_mappings SET read_only = :t WHERE uuid = 'b-108'"),
            {"t": True})
        assert read_only() in (True, 1)
        # The archive's twin has the column too (doc/source/contributor/architecture.rst).
        shadow = {c["name"]: c for c in sa.inspect(connection).get_columns(
            "shadow_block_device_mappings")}
        assert shadow["read_only"]["nullable"] is False
        connection.execute(sa.text("DELETE FROM block_device_mappings"))

    def _pre_upgrade_6433e749e3d1(self, connection):
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, locked, deleted, tags) VALUES ('i-old', :f, 0, '[]')"),
            {"f": False})
        connection.execute(sa.text("INSERT INTO tags (resource_id, tag) VALUES ('i-old', 'x')"))

    def _check_6433e749e3d1(self, connection, data):
        """instances.tags is gone (and its shadow); the rows and their tags stay."""
        inspector = sa.inspect(connection)
        for table in ("instances", "shadow_instances"):
            columns = {c["name"] for c in inspector.get_columns(table)}
            assert "tags" not in columns and "uuid" in columns, table
        assert connection.execute(sa.text(
            "SELECT i.uuid, t.tag FROM instances i JOIN tags t ON t.resource_id = i.uuid"
        )).all() == [("i-old", "x")]
        connection.execute(sa.text("DELETE FROM tags"))
        connection.execute(sa.text("DELETE FROM instances"))

    def _pre_upgrade_239eb3cadaca(self, connection):
        """A BDM written before the requested device was kept: it has none."""
        self._old_bdm(connection, "107")

    def _check_239eb3cadaca(self, connection, data):
        assert connection.execute(sa.text(
            "SELECT requested_device FROM block_device_mappings WHERE uuid = 'b-107'"
        )).scalar() is None
        connection.execute(sa.text(
            "UPDATE block_device_mappings SET requested_device = '/dev/vdb' "
            "WHERE uuid = 'b-107'"))
        # The archive's twin has the column too (doc/source/contributor/architecture.rst).
        shadow = {c["name"] for c in sa.inspect(connection).get_columns(
            "shadow_block_device_mappings")}
        assert "requested_device" in shadow
        connection.execute(sa.text("DELETE FROM block_device_mappings"))
        connection.execute(sa.text("DELETE FROM instances"))


@pytest.mark.parametrize("backend", conftest.BACKEND_PARAMS)
def test_walk_versions(backend, tmp_path):
    """Upgrade one revision at a time, running the hooks around each step."""
    conftest.require_backend(backend)
    hooks = MigrationHooks()
    with _empty_database(backend, tmp_path) as database:
        assert migration.version(database.conf, database=database) is None
        for revision in migration.revisions():
            with database.get_engine().begin() as connection:
                pre = getattr(hooks, f"_pre_upgrade_{revision}", None)
                data = pre(connection) if pre else None
                migration.upgrade_connection(connection, revision)
            with database.get_engine().begin() as connection:
                check = getattr(hooks, f"_check_{revision}", None)
                if check:
                    check(connection, data)
            assert migration.version(database.conf, database=database) == revision


@pytest.mark.parametrize("backend", conftest.BACKEND_PARAMS)
def test_models_match_migrations(backend, tmp_path):
    """autogenerate finds nothing to do at head: models.py and migrations agree."""
    conftest.require_backend(backend)
    with _empty_database(backend, tmp_path) as database:
        migration.upgrade(database.conf, database=database)
        with database.get_engine().connect() as connection:
            context = alembic_migration.MigrationContext.configure(
                connection, opts={"compare_type": True, "compare_server_default": False})
            diff = autogenerate.compare_metadata(context, models.Base.metadata)
        assert diff == [], f"models and migrations differ on {backend}: {diff}"


def test_stamp_and_version(tmp_path):
    with _empty_database("sqlite", tmp_path) as database:
        conf = database.conf
        first = migration.revisions()[0]
        migration.stamp(conf, first, database=database)
        assert migration.version(conf, database=database) == first
        # Also without an explicit Database: the wrapper builds and disposes one.
        assert migration.version(conf) == first


def test_default_connection_is_sqlite_under_state_path(tmp_path):
    conf = conftest.make_conf(tmp_path)
    assert conf.database.connection == f"sqlite:///{tmp_path}/volumesvc.sqlite"
    migration.upgrade(conf)
    assert migration.version(conf) == migration.revisions()[-1]


def test_migrations_ship_with_the_package():
    """The script directory is found next to the installed module, with no alembic.ini."""
    assert os.path.isfile(os.path.join(migration.MIGRATIONS_DIR, "env.py"))
    assert os.path.isfile(os.path.join(migration.MIGRATIONS_DIR, "script.py.mako"))
    assert len(migration.revisions()) == len(set(migration.revisions())) >= 2
    assert migration.script_directory().get_heads() == [migration.revisions()[-1]]
