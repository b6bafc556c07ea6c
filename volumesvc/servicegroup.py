"""Whether a service is up: last heartbeat against ``service_down_time``.

The one rule for every service; a compute's whole view (up, version,
capabilities) is ``objects/compute_host.py``, built on this rule.
"""

import datetime

# The capability a compute reports its availability zone under (see
# volumesvc/compute/manager.py); the heartbeat makes it the record's zone.
ZONE_CAPABILITY = "availability_zone"


def utcnow():
    """Now, as the naive UTC datetime the service records hold."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def naive_utc(moment):
    """``moment`` as a naive UTC datetime (records read back from some drivers carry a zone)."""
    if moment.tzinfo is not None:
        return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment


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
    elapsed = ((now or utcnow()) - naive_utc(seen)).total_seconds()
    return abs(elapsed) <= conf.service_down_time
