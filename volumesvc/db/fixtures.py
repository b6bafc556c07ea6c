"""Databases for tests: fresh migrated SQLite files and throwaway server databases.

Used by every functional test tier, hence in the package rather than in a
conftest. Nothing here imports pytest; conftests wrap these in fixtures.

- :func:`sqlite_database` gives a ``Database`` on a new, migrated SQLite
  file. The schema is migrated once per process into a template file that is
  then copied, so a fresh database costs a file copy, not an alembic run.
- :func:`provisioned_url` creates a uniquely named database on the local
  PostgreSQL or MariaDB server and drops it afterwards.
- :func:`server_database` is the two combined with a migration.
"""

import contextlib
import os
import shutil
import tempfile
import uuid

import sqlalchemy as sa

from volumesvc.db import api as db_api
from volumesvc.db import migration, models

# Admin URLs of the servers the opportunistic tests use; an env var points
# them elsewhere (e.g. a CI service container).
ADMIN_URLS = {
    "postgresql": os.environ.get(
        "VOLUMESVC_TEST_POSTGRESQL_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"),
    "mysql": os.environ.get(
        "VOLUMESVC_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/"),
}
BACKENDS = ("sqlite", "postgresql", "mysql")
SKIP_OPPORTUNISTIC_ENV = "VOLUMESVC_TEST_SKIP_OPPORTUNISTIC"

# Flavors inserted by the default-flavors migration; reset() keeps them.
DEFAULT_FLAVORIDS = frozenset({"1", "2", "3", "4", "5", "42"})

_template_path: str | None = None


class BackendUnavailable(Exception):
    """The PostgreSQL or MariaDB server for opportunistic tests cannot be reached."""


def sqlite_url(directory: str) -> str:
    return f"sqlite:///{os.path.join(directory, 'volumesvc.sqlite')}"


def _migrated_template() -> str:
    global _template_path
    if _template_path is None or not os.path.exists(_template_path):
        directory = tempfile.mkdtemp(prefix="volumesvc-db-template-")
        engine = sa.create_engine(sqlite_url(directory))
        try:
            with engine.begin() as connection:
                migration.upgrade_connection(connection)
        finally:
            engine.dispose()
        _template_path = os.path.join(directory, "volumesvc.sqlite")
    return _template_path


def sqlite_database(conf, directory: str) -> db_api.Database:
    """A ``Database`` on a fresh migrated SQLite file in ``directory``.

    Overrides ``[database] connection`` on ``conf`` so that anything else
    built from the same ConfigOpts (API app, conductor) sees the same file.
    The caller disposes the Database; the file goes with ``directory``.
    """
    os.makedirs(directory, exist_ok=True)
    shutil.copyfile(_migrated_template(), os.path.join(directory, "volumesvc.sqlite"))
    conf.set_override("connection", sqlite_url(directory), group="database")
    return db_api.Database(conf)


@contextlib.contextmanager
def fresh_sqlite_database(conf):
    """Context manager form of :func:`sqlite_database` with its own temp dir."""
    directory = tempfile.mkdtemp(prefix="volumesvc-db-")
    database = sqlite_database(conf, directory)
    try:
        yield database
    finally:
        database.dispose()
        shutil.rmtree(directory, ignore_errors=True)


def check_backend(backend: str) -> None:
    """Raise BackendUnavailable with a readable reason if the server is down."""
    engine = sa.create_engine(ADMIN_URLS[backend])
    try:
        with engine.connect():
            pass
    except Exception as exc:  # noqa: BLE001 - any driver error means "unavailable"
        raise BackendUnavailable(
            f"{backend} test server at {engine.url.render_as_string()} is unreachable "
            f"({exc.__class__.__name__}: {exc}). Start it, or set "
            f"{SKIP_OPPORTUNISTIC_ENV}=1 to skip the {backend} tests.") from exc
    finally:
        engine.dispose()


@contextlib.contextmanager
def provisioned_url(backend: str):
    """Create a uniquely named empty database on ``backend``; yield its URL; drop it."""
    name = f"volumesvc_test_{uuid.uuid4().hex[:16]}"
    admin = sa.create_engine(ADMIN_URLS[backend], isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            if backend == "mysql":
                connection.exec_driver_sql(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
            else:
                connection.exec_driver_sql(f"CREATE DATABASE {name}")
        url = admin.url.set(database=name)
        if backend == "mysql":
            url = url.update_query_dict({"charset": "utf8mb4"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            # NOTE: FORCE drops even if a leaked pooled connection is still open.
            force = " WITH (FORCE)" if backend == "postgresql" else ""
            connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{force}")
        admin.dispose()


@contextlib.contextmanager
def server_database(conf, backend: str):
    """A migrated ``Database`` in a throwaway database on the ``backend`` server."""
    with provisioned_url(backend) as url:
        conf.set_override("connection", url, group="database")
        database = db_api.Database(conf)
        try:
            migration.upgrade(conf, database=database)
            yield database
        finally:
            database.dispose()


def reset(database: db_api.Database) -> None:
    """Delete every row a test may have written, keeping the default flavors.

    Cheaper than a new database per test on the servers; children first so
    foreign keys hold.
    """
    with database.get_engine().begin() as connection:
        for table in reversed(models.Base.metadata.sorted_tables):
            statement = table.delete()
            if table.name == "flavors":
                statement = statement.where(table.c.flavorid.not_in(DEFAULT_FLAVORIDS))
            connection.execute(statement)
