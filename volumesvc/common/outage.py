"""Telling a database outage from other failures, and waiting one out.

In common, not in db: computes use it, and a compute never imports the
database layer.

A conductor whose database is unreachable fails its RPC calls with
DBConnectionError; the caller sees a ``RemoteError`` naming the class, and a
compute that raises such an error on to the conductor that called it makes
a RemoteError of a RemoteError, whose text is the only place the class is
named. Both the conductor (which keeps an accepted request for a re-run,
``conductor/volume_requests.py``) and the compute (which asks again rather
than undo an attach whose host side is done, ``compute/attach.py``) need to
know that the failure was the database and not the request.
"""

import re
import time

import sqlalchemy
from oslo_db import exception as db_exc
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

_REMOTE_TYPE = re.compile(r"Remote error: (\w+)")
_DOWN_TYPES = ("DBConnectionError", "TimeoutError")
# oslo.db makes DBConnectionError of PostgreSQL's connect failures only when
# libpq says "could not connect to server", which libpq 14 and later no
# longer say; a server shutting down or starting refuses in words of its
# own. These stay plain OperationalErrors (regression: a PostgreSQL restart
# answered API requests with 500s where MariaDB's gave 503s).
_POSTGRESQL_DOWN = re.compile(
    r"connection to server .* failed|could not connect to server|"
    r"the database system is (?:shutting down|starting up|in recovery mode|not yet accepting)|"
    r"server closed the connection unexpectedly|"
    r"terminating connection due to administrator command")
# Seconds between two tries of a call that met the database down: doubled
# from the first up to the last.
FIRST_DELAY = 1.0
LAST_DELAY = 8.0


def _remote_types(exc) -> list[str]:
    """The class names a ``RemoteError`` carries, the nested ones included."""
    exc_type = getattr(exc, "exc_type", None)
    if exc_type is None:
        return []
    return [exc_type, *_REMOTE_TYPE.findall(str(getattr(exc, "value", "") or ""))]


def database_down(exc) -> bool:
    """True when ``exc`` (or what caused it) is the database being unreachable."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (db_exc.DBConnectionError, sqlalchemy.exc.TimeoutError)):
            return True
        if isinstance(exc, sqlalchemy.exc.OperationalError) and (
                exc.connection_invalidated or _POSTGRESQL_DOWN.search(str(exc))):
            return True
        names = _remote_types(exc)
        if any(name in _DOWN_TYPES for name in names):
            return True
        if "OperationalError" in names and _POSTGRESQL_DOWN.search(str(exc.value)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class Patience:
    """Run a call again while it fails on the database being down, for at most ``wait`` s.

    Only for calls whose repetition is harmless (setting values on a row,
    deleting one): a call that failed because no connection could be made
    did nothing. Any other failure, or the outage outlasting ``wait``, is
    raised as it came.
    """

    def __init__(self, wait, *, sleep=time.sleep, clock=time.monotonic):
        self.wait = wait
        self._sleep = sleep
        self._clock = clock

    def call(self, what, function, *args, **kwargs):
        deadline = self._clock() + self.wait
        delay = FIRST_DELAY
        while True:
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                if not database_down(exc) or self._clock() + delay > deadline:
                    raise
                LOG.warning("Could not %s: the database is unreachable; asking again in "
                            "%.0f s (for at most %d s in all)", what, delay, self.wait)
            self._sleep(delay)
            delay = min(delay * 2, LAST_DELAY)
