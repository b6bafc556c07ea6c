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


def test_the_database_down_as_an_rpc_server_sends_it_is_a_503():
    """What a conductor whose database is down answers (``outage.TypedFailureDispatcher``)."""
    error = errors.to_api_error(exception.DatabaseUnavailable())
    assert (error.status, error.code) == (503, errors.UNAVAILABLE)
    assert error.message == exception.DatabaseUnavailable.MESSAGE


def test_a_database_error_is_judged_by_its_type_not_its_words():
    """Regression: a PostgreSQL restart mid-storm answered 500s (MariaDB's gave 503s).

    The refused connections are DBConnectionErrors now (``db/api.py``, proven
    against real servers in tests/functional/db/test_database_outage.py); a
    statement's OperationalError is not an outage whatever it says.
    """
    import oslo_messaging as messaging

    for message in ("FATAL:  the database system is shutting down",
                    'relation "x" does not exist'):
        operational = sqlalchemy.exc.OperationalError("SELECT 1", {}, Exception(message))
        assert errors.to_api_error(operational).status == 500
        remote = messaging.RemoteError("OperationalError", str(operational), "tb")
        assert errors.to_api_error(remote).status == 500
    assert errors.to_api_error(messaging.RemoteError("DBConnectionError", "x", "tb")).status == 503
    assert errors.to_api_error(db_exc.DBDeadlock()).status == 503
