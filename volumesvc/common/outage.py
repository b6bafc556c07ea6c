"""What kind of failure an exception is, decided by its type, and waiting an outage out.

In common, not in db: computes use it, and a compute never imports the
database layer.

One classification (:func:`classify`) for every place that must tell a
failure that goes away on its own (the database or a service behind us is
down) from one that does not (the request's own fault, a bug): the API
(503 or not), the conductor (keep an accepted request for a re-run,
``conductor/volume_requests.py``) and the compute (ask again rather than
undo an attach whose host side is done, ``compute/attach.py``).

It reads exception types only, never their text: oslo.db's (its exception
filters already turn each driver's errors into them; ``db/api.py`` adds
the connections PostgreSQL refuses, which oslo.db leaves as they come),
keystoneauth's, and our own. A failure that crossed RPC arrives either as
our own class (``volumesvc.exception`` is in ``rpc.ALLOWED_EXMODS``) or as
a ``RemoteError`` whose ``exc_type`` attribute names the class. An RPC
server sends the database being down as :class:`TypedFailureDispatcher`
makes it, :class:`~volumesvc.exception.DatabaseUnavailable`, so it stays a
type however many services relay it (a compute raising on to the conductor
what the conductor answered it).
"""

import enum
import time

import oslo_messaging as messaging
import sqlalchemy
from keystoneauth1 import exceptions as ks_exc
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_messaging.rpc import dispatcher as rpc_dispatcher

from volumesvc import exception

LOG = logging.getLogger(__name__)

# Seconds between two tries of a call that met the database down: doubled
# from the first up to the last.
FIRST_DELAY = 1.0
LAST_DELAY = 8.0


class Failure(enum.StrEnum):
    """The kinds of failure; the first three go away on their own (:data:`RETRYABLE`)."""

    DATABASE_DOWN = "database_down"   # no connection, lost connection, pool exhausted
    DATABASE_BUSY = "database_busy"   # a deadlock's victim: rolled back whole
    SERVICE_DOWN = "service_down"     # Cinder (or another service we call) did not answer, or 5xx
    REQUEST = "request"               # the request's own fault: asking again changes nothing
    FAILED = "failed"                 # another failure of ours, already explained to the user
    BUG = "bug"                       # anything else: logged with its traceback


RETRYABLE = frozenset({Failure.DATABASE_DOWN, Failure.DATABASE_BUSY, Failure.SERVICE_DOWN})

# Exception classes, by the name a ``RemoteError`` carries in ``exc_type``
# (the class was not in the caller's allowed modules).
_REMOTE = {
    "DBConnectionError": Failure.DATABASE_DOWN,
    "TimeoutError": Failure.DATABASE_DOWN,  # SQLAlchemy's: no pooled connection came free
    "DBDeadlock": Failure.DATABASE_BUSY,
}

# Ours that are the request's fault (each maps to a 4xx in api/errors.py).
_REQUEST = (exception.NotFound, exception.Invalid, exception.Conflict, exception.Forbidden)


def _classify_one(exc) -> Failure | None:
    """The kind of ``exc`` itself, or None when only what caused it can tell."""
    if isinstance(exc, (db_exc.DBConnectionError, sqlalchemy.exc.TimeoutError,
                        exception.DatabaseUnavailable)):
        return Failure.DATABASE_DOWN
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.connection_invalidated:
        # SQLAlchemy's dialect judged it a disconnect (oslo.db usually has
        # made a DBConnectionError of it already).
        return Failure.DATABASE_DOWN
    if isinstance(exc, db_exc.DBDeadlock):
        return Failure.DATABASE_BUSY
    if isinstance(exc, messaging.RemoteError):
        return _REMOTE.get(exc.exc_type or "")
    if isinstance(exc, exception.CinderAPIError):
        code = exc.code if isinstance(exc.code, int) else 500
        return Failure.SERVICE_DOWN if code >= 500 else Failure.REQUEST
    if isinstance(exc, exception.ServiceUnavailable):
        return Failure.SERVICE_DOWN
    if isinstance(exc, _REQUEST):
        return Failure.REQUEST
    if isinstance(exc, (ks_exc.ConnectionError, ks_exc.DiscoveryFailure,
                        ks_exc.EndpointNotFound, ks_exc.HttpServerError,
                        messaging.MessagingTimeout, messaging.MessageDeliveryFailure)):
        # ConnectionError covers ConnectFailure, ConnectTimeout and SSLError.
        return Failure.SERVICE_DOWN
    if isinstance(exc, ks_exc.HttpError):
        return Failure.REQUEST  # a 4xx: the service refused what was asked
    return None


def _chain(exc):
    """``exc`` and what caused it, outermost first (each once)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def classify(exc: BaseException) -> Failure:
    """The :class:`Failure` ``exc`` is, judged by its type and by what caused it.

    The database anywhere in the chain wins, because our adapters re-raise
    (a pool timeout under a ``CinderAPIError`` is still the database);
    otherwise the outermost exception of a known kind decides. A failure of
    ours of no other kind is :attr:`Failure.FAILED`; anything else a
    :attr:`Failure.BUG`.
    """
    kinds = [kind for kind in map(_classify_one, _chain(exc)) if kind is not None]
    for kind in kinds:
        if kind in (Failure.DATABASE_DOWN, Failure.DATABASE_BUSY):
            return kind
    if kinds:
        return kinds[0]
    if isinstance(exc, exception.VolumesvcException):
        return Failure.FAILED
    return Failure.BUG


def database_down(exc) -> bool:
    """True when ``exc`` (or what caused it) is the database being unreachable."""
    return classify(exc) is Failure.DATABASE_DOWN


class TypedFailureDispatcher(rpc_dispatcher.RPCDispatcher):
    """oslo.messaging's dispatcher, sending the database being down as a type of ours.

    oslo.db's exceptions are not in any caller's allowed modules: without
    this the caller gets a ``RemoteError``, and a service that raises that
    on to its own caller (a compute answering the conductor) a RemoteError
    of a RemoteError, whose class is named only in the text. As
    :class:`~volumesvc.exception.DatabaseUnavailable` it is re-created as
    itself at every hop.
    """

    def dispatch(self, incoming):
        try:
            return super().dispatch(incoming)
        except rpc_dispatcher.ExpectedException:
            raise
        except Exception as exc:
            if (not isinstance(exc, exception.DatabaseUnavailable)
                    and classify(exc) is Failure.DATABASE_DOWN):
                raise exception.DatabaseUnavailable() from exc
            raise


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
        return self._ask(what, function, args, kwargs, done=None)

    def record(self, what, function, *args, done, **kwargs):
        """Make the call that records a step already taken, until a conductor answers it.

        For the write that says a server now runs elsewhere (its guest has
        moved): giving up on it would leave the records naming a host the
        guest has left, and undoing the move would stop a guest the records
        may already place there. The call is made again while it fails on
        the database being down, as :meth:`call` does, and also while no
        conductor answers (a conductor killed with the call in hand, or
        none running: ``MessagingTimeout``), for at most ``wait`` seconds.
        A call that timed out may have been carried out with only its reply
        lost; when its repetition is then refused, ``done()`` reads the
        records and, if the first call did the work, its answer is returned
        in place of the refusal.
        """
        return self._ask(what, function, args, kwargs, done=done)

    def repeat(self, what, function, *args, **kwargs):
        """:meth:`record` for a call whose repetition changes nothing (it sets
        values, or reads): asked again while no conductor answers, a refusal
        raised as it comes."""
        return self._ask(what, function, args, kwargs, done=lambda: None)

    def _ask(self, what, function, args, kwargs, *, done):
        """:meth:`call` (``done`` None) or :meth:`record`."""
        deadline = self._clock() + self.wait
        delay = FIRST_DELAY
        unanswered = False
        while True:
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                if done is not None and isinstance(exc, messaging.MessagingTimeout):
                    if self._clock() + delay > deadline:
                        raise
                    unanswered = True
                    LOG.warning("Could not %s: no conductor answered; asking again in "
                                "%.0f s (for at most %d s in all)", what, delay, self.wait)
                else:
                    if unanswered and isinstance(exc, exception.VolumesvcException):
                        recorded = done()
                        if recorded:
                            LOG.info("The call to %s that got no answer had been carried "
                                     "out", what)
                            return recorded
                    if not database_down(exc) or self._clock() + delay > deadline:
                        raise
                    LOG.warning("Could not %s: the database is unreachable; asking again in "
                                "%.0f s (for at most %d s in all)", what, delay, self.wait)
            self._sleep(delay)
            delay = min(delay * 2, LAST_DELAY)
