"""The database handle: one oslo.db transaction context per ``Database``.

There is no module-level engine or context manager. Each process (and each
test) builds ``Database(conf)`` from its own ConfigOpts and passes it down,
so two differently configured databases can live in one interpreter.
"""

import contextlib
import os
import warnings

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade

from volumesvc import context as vs_context
from volumesvc.db import regexp

# NOTE: a writer waiting for another process's write lock on the SQLite file
# blocks up to this long before "database is locked". Heartbeats of several
# services and API workers write the same file in the single-machine setup.
SQLITE_BUSY_TIMEOUT_MS = 30000

# oslo.db [database] options that enginefacade does not accept as keywords;
# passing them only produces NotSupportedWarning noise.
_IGNORED_OPTS = {"backend", "asyncio_connection", "asyncio_slave_connection"}


def _facade_options(group) -> dict:
    """The [database] group as keyword arguments for enginefacade.configure."""
    values = {key: value for key, value in group.items() if key not in _IGNORED_OPTS}
    # NOTE: foreign keys are off by default in SQLite; we want the same
    # integrity on every backend.
    values["sqlite_fk"] = True
    return values


def _sqlite_on_connect(dbapi_connection, connection_record):
    """Per-connection pragmas for SQLite (they are not persisted in the file).

    ``journal_mode=WAL`` lets readers proceed while one process writes; it is
    stored in the file but setting it again is cheap and covers new files.
    ``REGEXP`` is RE2 rather than the ``re.search`` SQLAlchemy registers
    (this listener runs after the dialect's): a user's filter pattern must
    not be able to backtrack for minutes (see ``db/regexp.py``).
    """
    dbapi_connection.create_function("regexp", 2, regexp.sqlite_function(),
                                     deterministic=True)
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def _sqlite_on_begin(connection):
    """Begin every SQLite transaction IMMEDIATE (take the write lock up front).

    NOTE: oslo.db turns pysqlite's own BEGIN off and emits a deferred
    ``BEGIN``. A deferred transaction that read first and then writes, after
    another connection committed, gets SQLITE_BUSY at once (WAL snapshot
    upgrade) without waiting for busy_timeout: "database is locked" as soon
    as two services write. With IMMEDIATE, writers queue on the lock for up
    to busy_timeout instead. This replaces oslo.db's listener (see
    :func:`_on_engine_create`) and keeps its ``in_transaction`` marker, which
    oslo.db's commit/rollback listener clears.
    """
    if "in_transaction" not in connection.info:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
        connection.info["in_transaction"] = True


def _connect(dialect, connection_record, cargs, cparams):
    """Open a DBAPI connection; one the database will not open is DBConnectionError.

    oslo.db makes a DBConnectionError of MySQL's refused connections (by
    error number) but not of PostgreSQL's: psycopg2 raises a plain
    OperationalError with no SQLSTATE when a connection cannot be opened
    (refused, or the server shutting down, starting up, out of connection
    slots). Whatever the driver, an OperationalError from opening a
    connection means the database is not available to us, and
    ``common/outage.py`` reads only the type.
    """
    try:
        return dialect.connect(*cargs, **cparams)
    except dialect.loaded_dbapi.OperationalError as exc:
        raise db_exc.DBConnectionError(exc) from exc


def _on_engine_create(engine: sa.Engine) -> None:
    sa.event.listen(engine, "do_connect", _connect)
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_on_connect)
        for listener in list(engine.dispatch.begin):
            if getattr(listener, "__name__", "") == "_sqlite_emit_begin":
                sa.event.remove(engine, "begin", listener)
        sa.event.listen(engine, "begin", _sqlite_on_begin)


def _ensure_sqlite_directory(url: str) -> None:
    """Create the directory of a file-backed SQLite URL (first start of a node)."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return
    path = parsed.database
    if path and path != ":memory:" and not path.startswith("file:"):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)


# For a function that runs whole transactions of its own (never inside a
# caller's): when MariaDB or Galera picks one as a deadlock's victim it is
# rolled back whole, so running the function again is safe and is what the
# database asks for.
retry_on_deadlock = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_interval=0.05, inc_retry_interval=True, retry_on_deadlock=True)


def _enter(stack, transaction):
    """Enter an enginefacade transaction, a first connection refused being DBConnectionError.

    The first transaction of a process starts the engine, and oslo.db opens
    a test connection before :func:`_on_engine_create` can add
    :func:`_connect`: PostgreSQL refusing that one
    comes out as a plain OperationalError with no statement. Entering a
    transaction runs none, so an OperationalError without one raised here
    is that connection.
    """
    try:
        return stack.enter_context(transaction)
    except sa.exc.OperationalError as exc:
        if exc.statement is None:
            raise db_exc.DBConnectionError(exc) from exc
        raise


class Database:
    """Owns the engine and session factory for one ``[database]`` config.

    ``reader(ctx)`` / ``writer(ctx)`` yield a SQLAlchemy Session inside a
    transaction; nested blocks with the same context join the outer
    transaction (enginefacade semantics), so object functions compose.
    """

    def __init__(self, conf):
        self.conf = conf
        _ensure_sqlite_directory(conf.database.connection)
        self._tc = enginefacade.transaction_context()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._tc.configure(**_facade_options(conf.database))
        self._tc.append_on_engine_create(_on_engine_create)
        # NOTE: when the facade starts, oslo.db registers its option
        # definitions on cfg.CONF too; every value it uses still comes from
        # our ``conf`` because all of them are passed explicitly above.

    @staticmethod
    def _context(context):
        # NOTE: None means "the service itself" (heartbeats, periodic tasks);
        # enginefacade needs a real object to attach its transaction state to.
        return context if context is not None else vs_context.get_admin_context()

    @contextlib.contextmanager
    def reader(self, context=None):
        """A read-only transaction; yields an ``orm.Session``."""
        with contextlib.ExitStack() as stack:
            yield _enter(stack, self._tc.reader.using(self._context(context)))

    @contextlib.contextmanager
    def writer(self, context=None):
        """A read-write transaction committed at the end of the block."""
        with contextlib.ExitStack() as stack:
            yield _enter(stack, self._tc.writer.using(self._context(context)))

    def get_engine(self) -> sa.Engine:
        """The writer engine (starts the facade on first use)."""
        return self._tc.writer.get_engine()

    @property
    def backend_name(self) -> str:
        return self.get_engine().dialect.name

    def dispose(self) -> None:
        """Close pooled connections (tests, and before a process forks)."""
        self._tc.dispose_pool()

