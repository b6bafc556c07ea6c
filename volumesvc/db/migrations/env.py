"""Alembic environment: always run online, on a connection migration.py gives us.

There is no alembic.ini. ``volumesvc.db.migration`` builds the alembic
Config in code and puts an open connection in ``config.attributes``, so the
same code path serves ``volumesvc-manage db sync``, tests and all backends.
"""

from alembic import context

from volumesvc.db import models

config = context.config


def run_migrations_online():
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "volumesvc migrations run through volumesvc.db.migration, which "
            "passes a connection in config.attributes")
    context.configure(
        connection=connection,
        target_metadata=models.Base.metadata,
        # NOTE: batch mode lets later migrations alter SQLite tables, which
        # SQLite can only do by copying the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
run_migrations_online()
