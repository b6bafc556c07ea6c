"""The database being down, as real servers and drivers fail: one type whatever the backend.

Regression: a PostgreSQL restart mid-storm answered API requests with 500s
where MariaDB's gave 503s: libpq words a refused connection in a way
oslo.db does not turn into DBConnectionError. Each test puts a loopback
TCP relay of its own between the Database and the server, and stops it
to take the server away.
"""

import socket
import threading

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from tests.fixtures import database as db_fixtures
from tests.functional.db.conftest import make_conf, require_backend
from volumesvc import context as vs_context
from volumesvc.api import errors
from volumesvc.common import outage
from volumesvc.db import api as db_api

SERVERS = [pytest.param("postgresql", marks=pytest.mark.postgresql),
           pytest.param("mysql", marks=pytest.mark.mysql)]


class Relay:
    """Forwards loopback connections on ``port`` to ``target``; ``stop`` cuts them all."""

    def __init__(self, target, port=0):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target, timeout=10)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        if self.listener.fileno() < 0:
            return
        # NOTE: close() alone leaves a socket blocked in accept() listening.
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.thread.join(timeout=5)


@pytest.fixture(params=SERVERS)
def server_url(request):
    require_backend(request.param)
    with db_fixtures.provisioned_url(request.param) as url:
        yield sa.engine.make_url(url)


def _database(tmp_path, url, **overrides):
    conf = make_conf(tmp_path)
    conf.set_override("connection", url.render_as_string(hide_password=False), group="database")
    # One try when the engine starts, at once: the default waits 10 × 10 s.
    conf.set_override("max_retries", 1, group="database")
    conf.set_override("retry_interval", 0, group="database")
    for name, value in overrides.items():
        conf.set_override(name, value, group="database")
    return db_api.Database(conf)


def _select(database, context=None):
    with database.reader(context or vs_context.get_admin_context()) as session:
        return session.execute(sa.text("SELECT 1")).scalar()


def _failure(database, context=None):
    with pytest.raises(Exception) as info:
        _select(database, context)
    return info.value


def _assert_down(exc):
    assert isinstance(exc, db_exc.DBConnectionError), repr(exc)
    assert outage.classify(exc) is outage.Failure.DATABASE_DOWN
    error = errors.to_api_error(exc)
    assert (error.status, error.code) == (503, errors.UNAVAILABLE)


def test_a_server_that_refuses_the_first_connection_is_down(tmp_path, server_url):
    relay = Relay((server_url.host, server_url.port))
    relay.stop()
    database = _database(tmp_path, server_url.set(host="127.0.0.1", port=relay.port))
    try:
        _assert_down(_failure(database))
    finally:
        database.dispose()


def test_a_server_that_goes_away_and_comes_back(tmp_path, server_url):
    relay = Relay((server_url.host, server_url.port))
    database = _database(tmp_path, server_url.set(host="127.0.0.1", port=relay.port))
    try:
        assert _select(database) == 1
        relay.stop()
        _assert_down(_failure(database))   # the pooled connection is gone
        _assert_down(_failure(database))   # a new one is refused
        relay = Relay((server_url.host, server_url.port), port=relay.port)
        assert _select(database) == 1
    finally:
        relay.stop()
        database.dispose()


def test_a_pool_with_no_connection_free_is_down(tmp_path, server_url):
    database = _database(tmp_path, server_url, max_pool_size=1, max_overflow=0,
                         pool_timeout=1)
    try:
        with database.reader(vs_context.get_admin_context()) as session:
            session.execute(sa.text("SELECT 1"))
            exc = _failure(database, vs_context.get_admin_context())
        assert isinstance(exc, sa.exc.TimeoutError), repr(exc)
        assert outage.classify(exc) is outage.Failure.DATABASE_DOWN
    finally:
        database.dispose()


def test_a_deadlock_victim_is_busy_not_down(tmp_path, server_url):
    database = _database(tmp_path, server_url)
    engine = database.get_engine()
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE pair (id INTEGER PRIMARY KEY, n INTEGER)")
            connection.exec_driver_sql("INSERT INTO pair (id, n) VALUES (1, 0), (2, 0)")
        first, second = engine.connect(), engine.connect()
        first.begin()
        second.begin()
        first.exec_driver_sql("UPDATE pair SET n = 1 WHERE id = 1")
        second.exec_driver_sql("UPDATE pair SET n = 1 WHERE id = 2")
        failures = []

        def cross(connection, row):
            try:
                connection.exec_driver_sql(f"UPDATE pair SET n = 2 WHERE id = {row}")
            except Exception as exc:  # noqa: BLE001 - one of the two is the victim
                failures.append(exc)
                connection.rollback()

        waiting = threading.Thread(target=cross, args=(first, 2))
        waiting.start()
        cross(second, 1)
        waiting.join(timeout=60)
        first.close()
        second.close()
        (exc,) = failures
        assert isinstance(exc, db_exc.DBDeadlock), repr(exc)
        assert outage.classify(exc) is outage.Failure.DATABASE_BUSY
        assert errors.to_api_error(exc).status == 503
    finally:
        database.dispose()
