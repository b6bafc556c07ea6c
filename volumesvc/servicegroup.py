"""Whether a service is up: last heartbeat against ``service_down_time``."""

import datetime


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
