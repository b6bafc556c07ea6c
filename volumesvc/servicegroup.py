"""Whether a service is up: last heartbeat against ``service_down_time``."""

import datetime
import time

# The capability a compute reports its availability zone under (see
# volumesvc/compute/manager.py); the heartbeat makes it the record's zone.
ZONE_CAPABILITY = "availability_zone"


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def last_heartbeat(service):
    """The last time ``service`` reported, as a naive UTC datetime or None."""
    return service.last_seen_up or service.updated_at or service.created_at


def is_up(conf, service, now=None) -> bool:
    """True when the service heartbeated within ``[DEFAULT] service_down_time``.

    A service an operator marked ``forced_down`` is down whatever its
    heartbeats say (Nova's 2.11 semantics).
    """
    if getattr(service, "forced_down", False):
        return False
    seen = last_heartbeat(service)
    if seen is None:
        return False
    if seen.tzinfo is not None:
        seen = seen.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    elapsed = ((now or _utcnow()) - seen).total_seconds()
    return abs(elapsed) <= conf.service_down_time


class UpCache:
    """Recent "this service is up" answers, so a storm of attaches reads it once.

    Why: the conductor checks the compute before each attach; at tens of
    attaches a second that was one service-row read (and its object) per
    attach for an answer that changes at most once per heartbeat. Only
    *up* is remembered, for at most ``ttl`` seconds and never past the
    moment the last heartbeat read would make it look down; anything else
    (down, unknown, forced down meanwhile) is read again. One per process
    owner (the conductor manager), never global.
    """

    def __init__(self, conf, ttl=1.0, clock=None):
        self._conf = conf
        self._ttl = ttl
        self._clock = clock or time.monotonic
        self._until = {}  # key -> monotonic deadline

    def is_up(self, key, read):
        """True when ``key``'s service is up; ``read()`` returns the service or None."""
        now = self._clock()
        if self._until.get(key, 0.0) > now:
            return True
        service = read()
        if service is None or not is_up(self._conf, service):
            self._until.pop(key, None)
            return False
        seen = last_heartbeat(service)
        if seen.tzinfo is not None:
            seen = seen.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        left = self._conf.service_down_time - (_utcnow() - seen).total_seconds()
        self._until[key] = now + min(self._ttl, left)
        return True
