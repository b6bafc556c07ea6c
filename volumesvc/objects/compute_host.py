"""One view of a compute host: up, version, capabilities, enabled, zone.

Why one view: the API (attach refusals, ``host_status``, zones), the
conductor (attach, delete, reconcile) and the scheduler all ask the same
questions of a compute's service record. Each used to read the record
itself and decide "up" on its own; here the record is read in one place
and judged by one rule (``servicegroup.is_up``), so they cannot disagree.
The view lives under ``objects/`` so that ``api/``, ``conductor/`` and the
scheduler import it without importing ``compute/``.
"""

import dataclasses
import datetime
import time
import types
from collections.abc import Mapping
from typing import Any

from volumesvc import binaries, exception, servicegroup
from volumesvc.objects import service as service_obj

# The zone of a compute whose record names none (Nova's default zone).
DEFAULT_ZONE = "nova"


@dataclasses.dataclass(frozen=True)
class ComputeHost:
    """What is known of one compute host, as of the read that made it.

    ``registered``: the host has a live service record; a host without one
    is down, disabled-free, version 0 and reports no capability (the
    callers' "missing record" answers all follow from that).
    """

    host: str
    registered: bool = False
    up: bool = False
    forced_down: bool = False
    disabled: bool = False
    version: int = 0
    capabilities: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({}))
    availability_zone: str | None = None
    last_heartbeat: datetime.datetime | None = None
    # False for a record that never reported (only created): ``host_status``
    # calls it UNKNOWN rather than DOWN, as Nova does.
    reported: bool = False

    @classmethod
    def from_service(cls, conf, service, now=None) -> "ComputeHost":
        """The view of a compute's service record, judged up or down now."""
        return cls(host=service.host, registered=True,
                   up=servicegroup.is_up(conf, service, now=now),
                   forced_down=bool(service.forced_down), disabled=bool(service.disabled),
                   version=service.version or 0,
                   capabilities=types.MappingProxyType(dict(service.capabilities or {})),
                   availability_zone=service.availability_zone or DEFAULT_ZONE,
                   last_heartbeat=servicegroup.last_heartbeat(service),
                   reported=service.last_seen_up is not None or service.updated_at is not None)

    def supports(self, capability) -> bool | None:
        """True or False as the host reports ``capability``; None when it does not say.

        None matters to the API, which leaves a host that does not mention a
        capability to the compute's own check; a caller that needs it
        reported treats None as no.
        """
        value = self.capabilities.get(capability)
        return None if value is None else bool(value)

    @property
    def host_status(self) -> str:
        """Nova's ``host_status`` (API 2.16): UP, DOWN, MAINTENANCE (up, disabled) or UNKNOWN."""
        if not self.registered:
            return "UNKNOWN"
        if self.forced_down:
            return "DOWN"
        if not self.reported:
            return "UNKNOWN"
        if self.up:
            return "MAINTENANCE" if self.disabled else "UP"
        return "DOWN"


def get(conf, db, context, host, *, cache=None) -> ComputeHost:
    """The view of ``host``'s compute (unregistered when it has no record).

    With ``cache`` (the conductor's :class:`UpCache`) an *up* view read
    moments ago is returned again instead of reading the record.
    """
    if cache is not None:
        remembered = cache.recall(host)
        if remembered is not None:
            return remembered
    try:
        view = ComputeHost.from_service(
            conf, service_obj.get_by_host_and_binary(db, context, host, binaries.COMPUTE))
    except exception.NotFound:
        view = ComputeHost(host=host)
    if cache is not None:
        cache.remember(view)
    return view


def list_hosts(conf, db, context) -> list[ComputeHost]:
    """The views of every registered compute, in registration order (one query)."""
    now = servicegroup.utcnow()
    return [ComputeHost.from_service(conf, service, now=now)
            for service in service_obj.list_services(db, context, binary=binaries.COMPUTE)]


class UpCache:
    """Recent *up* views, so a storm of attaches reads a compute's record about once a second.

    Why: the conductor checks the compute before each attach; at tens of
    attaches a second that was one service-row read per attach for an
    answer that changes at most once per heartbeat. Only an *up* view is
    remembered, for at most ``ttl`` seconds and never past the moment its
    last heartbeat would make it look down; anything else (down, unknown)
    is read again. Its capabilities and version are as old as that read,
    which is fine: a compute changes them only when it restarts. One per
    process owner (the conductor manager), never global.
    """

    def __init__(self, conf, ttl=1.0, clock=None):
        self._conf = conf
        self._ttl = ttl
        self._clock = clock or time.monotonic
        self._views: dict[str, tuple[float, ComputeHost]] = {}  # host -> (deadline, view)

    def recall(self, host) -> ComputeHost | None:
        """The remembered up view of ``host``, or None once it is stale."""
        deadline, view = self._views.get(host, (0.0, None))
        return view if deadline > self._clock() else None

    def remember(self, view: ComputeHost) -> None:
        if not view.up or view.last_heartbeat is None:
            self._views.pop(view.host, None)
            return
        seen = servicegroup.naive_utc(view.last_heartbeat)
        left = self._conf.service_down_time - (servicegroup.utcnow() - seen).total_seconds()
        self._views[view.host] = (self._clock() + min(self._ttl, left), view)
