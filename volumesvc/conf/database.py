"""Options in [database]: oslo.db's own options with volumesvc's default URL."""

from oslo_db import options as db_options

# NOTE: the single-machine setup keeps its database beside the rest of the
# state; several processes share the file, which is why db/api.py turns on
# WAL mode and a busy timeout for SQLite.
_DEFAULT_CONNECTION = "sqlite:///$state_path/volumesvc.sqlite"


def register_opts(conf):
    """Register oslo.db's [database] options on ``conf`` (never on cfg.CONF)."""
    db_options.set_defaults(conf, connection=_DEFAULT_CONNECTION)


def list_opts():
    return [("database", db_options.database_opts)]
