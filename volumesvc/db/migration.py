"""Thin wrapper around alembic: upgrade, version and stamp for a ConfigOpts.

The alembic configuration is built in code from the installed package's
``migrations`` directory, so ``volumesvc-manage db sync`` works from a wheel
with no alembic.ini next to it.
"""

import contextlib
import os

import sqlalchemy as sa
from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from volumesvc.db import api as db_api

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")


def _alembic_config(connection: sa.Connection | None = None) -> alembic_config.Config:
    config = alembic_config.Config()
    config.set_main_option("script_location", MIGRATIONS_DIR)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@contextlib.contextmanager
def _connection(conf, database: db_api.Database | None):
    """A connection in a transaction, from ``database`` or a short-lived one."""
    owned = database is None
    database = database or db_api.Database(conf)
    try:
        with database.get_engine().begin() as connection:
            yield connection
    finally:
        if owned:
            database.dispose()


def script_directory() -> alembic_script.ScriptDirectory:
    return alembic_script.ScriptDirectory.from_config(_alembic_config())


def revisions() -> list[str]:
    """Every revision id, oldest first (what the migration tests walk)."""
    return [rev.revision for rev in reversed(list(script_directory().walk_revisions()))]


def upgrade(conf, revision: str = "head", database: db_api.Database | None = None) -> None:
    """Upgrade the ``[database]`` schema to ``revision``."""
    with _connection(conf, database) as connection:
        upgrade_connection(connection, revision)


def upgrade_connection(connection: sa.Connection, revision: str = "head") -> None:
    """Upgrade through an open connection (tests walking revisions, fixtures)."""
    command.upgrade(_alembic_config(connection), revision)


def version(conf, database: db_api.Database | None = None) -> str | None:
    """The current revision, or None for an empty (never migrated) database."""
    with _connection(conf, database) as connection:
        return alembic_migration.MigrationContext.configure(connection).get_current_revision()


def stamp(conf, revision: str, database: db_api.Database | None = None) -> None:
    """Record ``revision`` as current without running migrations."""
    with _connection(conf, database) as connection:
        command.stamp(_alembic_config(connection), revision)
