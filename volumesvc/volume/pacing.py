"""Back-pressure on the calls a process sends Cinder: a bound that follows Cinder's latency.

Why: Cinder answers an attachment update only after its volume service did
the backend's work over RPC, and its API gives up on that RPC after a fixed
wait (``rpc_response_timeout``, 60 s by default). A storm that sends every
attachment update at once queues them inside Cinder until the last ones pass
that wait and fail, so the attach is rolled back although nothing was wrong
but the crowd. Bounding what one process has in flight keeps the queue here
instead, where the attach simply stays ``attaching`` (2.106) a little longer.

How the bound moves (a latency gradient): the lowest latency seen recently
is what an unloaded Cinder takes. While calls take no more than
``TOLERANCE`` times that, the bound grows by about its square root per call,
up to ``[cinder] max_concurrent_calls``; as calls slow down past it, the
bound shrinks in proportion (at most by half per call), so the calls in
flight follow what Cinder serves without a queue of its own. An answer that
says Cinder is overloaded (a 5xx or no answer) halves the bound at once.
The lowest latency drifts up slowly, so a backend that became slower for
good is not held to its old speed for ever.

One :class:`Pacing` per process (the compute's or the conductor's
``CinderAPI``): the bound protects Cinder from this process, and each
process learns Cinder's latency from its own calls.
"""

import contextlib
import math
import threading
import time

import prometheus_client as prom

from volumesvc import exception

#: Latency up to this many times the lowest is taken as an unloaded Cinder.
TOLERANCE = 2.0
#: Weight of each new estimate of the bound (the rest is the old bound).
SMOOTHING = 0.2
#: Share of the gap the lowest latency closes towards each new sample.
FLOOR_DRIFT = 0.001


class PacingTimeout(exception.CinderConnectionFailed):
    """A call waited longer than ``[cinder] pacing_wait_timeout`` for its turn."""


class Pacing:
    """At most ``limit`` calls at once; ``limit`` follows the calls' latency.

    ``maximum`` 0 turns pacing off: every call goes at once, as before.
    ``overloaded(exc)``: whether a call's exception says Cinder could not
    keep up (the adapter knows its client's exception types).
    """

    def __init__(self, *, maximum, wait_timeout, overloaded=lambda exc: False, minimum=1,
                 clock=time.monotonic):
        self.maximum = maximum
        self.minimum = min(minimum, maximum) if maximum else minimum
        self.wait_timeout = wait_timeout
        # Start low: the first calls teach the floor before a crowd is let through.
        self.limit = float(min(maximum, max(self.minimum, 4))) if maximum else 0.0
        self.in_flight = 0
        self.waiting = 0
        self.waits_timed_out = 0
        self.floor = None
        self._overloaded = overloaded
        self._clock = clock
        self._cond = threading.Condition()

    @property
    def enabled(self) -> bool:
        return self.maximum > 0

    @contextlib.contextmanager
    def slot(self, what):
        """Hold one of the ``limit`` places while the body calls Cinder.

        The body's own exceptions pass through; their kind tells the bound
        whether Cinder was overloaded (``overloaded``).
        """
        if not self.enabled:
            yield
            return
        self._acquire(what)
        started = self._clock()
        try:
            yield
        except Exception as exc:
            self._release(self._clock() - started, self._overloaded(exc))
            raise
        self._release(self._clock() - started, False)

    def _acquire(self, what):
        deadline = self._clock() + self.wait_timeout
        with self._cond:
            self.waiting += 1
            try:
                while self.in_flight >= int(self.limit):
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        self.waits_timed_out += 1
                        raise PacingTimeout(
                            reason=f"{what}: {self.in_flight} calls to Cinder still running "
                                   f"after {self.wait_timeout} s ([cinder] "
                                   "pacing_wait_timeout); Cinder is too slow for the load")
                    self._cond.wait(remaining)
            finally:
                self.waiting -= 1
            self.in_flight += 1

    def _release(self, seconds, was_overloaded):
        with self._cond:
            self.in_flight -= 1
            self._adapt(seconds, was_overloaded)
            self._cond.notify_all()

    def _adapt(self, seconds, was_overloaded):
        """Move the bound after one call that took ``seconds`` (under the lock)."""
        if was_overloaded:
            self.limit = max(self.minimum, self.limit / 2)
            return
        seconds = max(seconds, 1e-6)
        if self.floor is None or seconds < self.floor:
            self.floor = seconds
        else:
            self.floor += (seconds - self.floor) * FLOOR_DRIFT
        gradient = min(1.0, max(0.5, TOLERANCE * self.floor / seconds))
        estimate = self.limit * gradient + math.sqrt(self.limit)
        self.limit = min(float(self.maximum), max(
            float(self.minimum), self.limit * (1 - SMOOTHING) + estimate * SMOOTHING))

    def register_metrics(self, registry):
        """Gauges of the bound, the calls in flight and those waiting, on ``registry``."""
        for name, doc, read in (
                ("volumesvc_cinder_pacing_limit",
                 "Calls to Cinder this process lets run at once now ([cinder] "
                 "max_concurrent_calls is the most; it follows Cinder's latency).",
                 lambda: self.limit),
                ("volumesvc_cinder_pacing_in_flight",
                 "Calls to Cinder of this process running now.", lambda: self.in_flight),
                ("volumesvc_cinder_pacing_waiting",
                 "Calls to Cinder of this process waiting for their turn.",
                 lambda: self.waiting),
                ("volumesvc_cinder_pacing_timeouts",
                 "Calls to Cinder that gave up waiting for their turn "
                 "([cinder] pacing_wait_timeout) since the process started.",
                 lambda: self.waits_timed_out)):
            prom.Gauge(name, doc, registry=registry).set_function(read)

