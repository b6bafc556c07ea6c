"""Failures of the services behind the API are 503s, never "Unexpected API Error" 500s.

Regression: under a storm of 1000 attaches Cinder's API answered 500s and
the API passed them on as its own generic 500; a database whose pool is
exhausted or which is restarting did the same.
"""

import sqlalchemy.exc
from oslo_db import exception as db_exc

from volumesvc import exception
from volumesvc.api import errors


def test_a_cinder_server_error_is_a_503_saying_cinder_failed():
    error = errors.to_api_error(exception.CinderAPIError(code=500, reason="Unable to update"))
    assert error.status == 503
    assert errors.fault_name(error.status) == "serviceUnavailable"
    assert "Cinder request failed with HTTP 500: Unable to update" in error.message


def test_a_database_that_is_gone_or_saturated_is_a_503():
    for exc in (db_exc.DBConnectionError("gone"),
                sqlalchemy.exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached")):
        error = errors.to_api_error(exc)
        assert error.status == 503, exc
        assert "database" in error.message


def test_anything_else_is_still_the_generic_500():
    error = errors.to_api_error(RuntimeError("bug"))
    assert error.status == 500 and "Unexpected API Error" in error.message


def _operational(message):
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception(message))


def test_a_postgresql_restart_is_a_503_too():
    """Regression: a PostgreSQL restart mid-storm answered 500s (MariaDB's gave 503s):
    libpq 14 and later word a refused connection in a way oslo.db does not wrap."""
    import oslo_messaging as messaging

    for message in ('connection to server at "10.251.1.1", port 5543 failed: Connection '
                    'refused\n\tIs the server running on that host and accepting TCP/IP '
                    'connections?',
                    "FATAL:  the database system is shutting down",
                    "FATAL:  the database system is starting up",
                    "server closed the connection unexpectedly",
                    "FATAL:  terminating connection due to administrator command"):
        error = errors.to_api_error(_operational(message))
        assert error.status == 503, message
        remote = messaging.RemoteError("OperationalError", str(_operational(message)), "tb")
        assert errors.to_api_error(remote).status == 503, message
    # A query the database refuses for what it says is still the request's fault or ours.
    assert errors.to_api_error(_operational('relation "x" does not exist')).status == 500
