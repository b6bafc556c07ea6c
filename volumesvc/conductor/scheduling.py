"""Host selection: which compute gets a new (or unshelved) instance.

No placement service here: the candidate set is small (one service row per
compute) and read in one query, so a plain filter-and-weigh is enough. The
one entry point, :func:`pick_host`, is shared by every flow that puts an
instance on a host (build today; unshelve "capability-aware like a boot").
"""

import dataclasses

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj

LOG = logging.getLogger(__name__)

#: The capability a host needs for an instance with a multiattach volume.
MULTIATTACH = "supports_multiattach"


class NoValidHost(exception.VolumesvcException):
    msg_fmt = "No valid host was found. %(reason)s"


@dataclasses.dataclass(frozen=True)
class Requirements:
    """What the chosen host must offer.

    ``needs``: capability names the host's driver must publish as true (the
    ``needs`` of a request spec, e.g. ``["supports_multiattach"]`` for a
    boot with a multiattach volume); ``availability_zone``: None for any;
    ``hosts``: only these hosts (unshelve to a host, 2.91), None for any;
    ``min_version``: skip computes whose service version is older (work they
    cannot do yet, e.g. unshelve).
    """

    needs: tuple = ()
    availability_zone: str | None = None
    hosts: tuple | None = None
    min_version: int = 0
    vcpus: int = 0
    memory_mb: int = 0

    @classmethod
    def from_request_spec(cls, spec) -> "Requirements":
        spec = spec or {}
        flavor = spec.get("flavor") or {}
        host = spec.get("requested_host")
        return cls(needs=tuple(spec.get("needs") or ()),
                   availability_zone=spec.get("availability_zone"),
                   hosts=(host,) if host else None,
                   vcpus=int(flavor.get("vcpus") or 0),
                   memory_mb=int(flavor.get("memory_mb") or 0))


def volume_needs(cinder, context, bdms) -> list[str]:
    """The capabilities a host needs for the server's volumes (multiattach), from Cinder."""
    for bdm in bdms:
        if bdm.volume_id and cinder.get(context, bdm.volume_id).get("multiattach"):
            return [MULTIATTACH]
    return []


def _no_room(caps, conf, used, requirements) -> str | None:
    """Why a host reporting ``caps`` and holding ``used`` has no room, or None when it has.

    A host that reports no size (an older compute) is not checked.
    """
    checks = (("vcpus", "vCPUs", requirements.vcpus, conf.cpu_allocation_ratio, ""),
              ("memory_mb", "RAM", requirements.memory_mb, conf.ram_allocation_ratio, " MiB"))
    for key, what, wanted, ratio, unit in checks:
        total = caps.get(key)
        if not wanted or not isinstance(total, int):
            continue
        free = int(total * ratio) - used[key]
        if wanted > free:
            return f"not enough {what} ({max(free, 0)}{unit} free, {wanted}{unit} needed)"
    return None


def _refusal(host, requirements) -> str | None:
    """Why the compute ``host`` (a ``ComputeHost``) cannot take the instance, or None."""
    if requirements.hosts is not None and host.host not in requirements.hosts:
        return "not a requested host"
    if host.disabled:
        return "disabled"
    if host.version < requirements.min_version:
        return f"service version {host.version} < {requirements.min_version}"
    if not host.up:
        return "down"
    missing = [need for need in requirements.needs if not host.supports(need)]
    if missing:
        return "lacks " + ", ".join(missing)
    zone = requirements.availability_zone
    if zone and host.availability_zone != zone:
        return f"not in availability zone {zone}"
    return None


def pick_host(conf, db, context, requirements: Requirements, exclude=None,
              probe=None) -> str:
    """The up, enabled compute with room that meets ``requirements``, fewest instances first.

    Room: the flavors already on the host plus this one fit in the
    ``memory_mb`` and ``vcpus`` the compute reports times
    ``[DEFAULT] ram_allocation_ratio`` / ``cpu_allocation_ratio``.

    Fewest instances spreads consecutive boots across the computes (ties go
    to the first host name, so the choice is reproducible). ``exclude``:
    host → why it is out (a claim on it just failed). Raises
    :class:`NoValidHost` naming why each compute was left out, so the fault
    on the ERROR instance tells the operator what to fix.

    ``probe(host) -> bool``: when no host is up, each compute that is down
    only by its heartbeat's age (not forced down, and fit in every other
    way) is asked directly, and one that answers counts as up. Why: a host
    busy starting a wave of guests can miss its heartbeats for longer than
    ``service_down_time`` while it is well; without the question every
    build sent during the wave failed with "No valid host" (the boot storm
    of 100 on two cores). A host that is really gone does not answer, and
    the build fails as before, ``[compute] host_probe_timeout`` later.
    """
    views = compute_host.list_hosts(conf, db, context)
    exclude = exclude or {}
    try:
        return _choose(conf, db, context, requirements, views, exclude)
    except NoValidHost:
        if probe is None:
            raise
        quiet = [view.host for view in views if _quiet(view, requirements, exclude)]
        answered = {host for host in quiet if probe(host)}
        if not answered:
            raise
    LOG.info("Compute hosts %s look down (no recent heartbeat) but answered: placing on them",
             ", ".join(sorted(answered)))
    views = [dataclasses.replace(view, up=True) if view.host in answered else view
             for view in views]
    return _choose(conf, db, context, requirements, views, exclude)


def _quiet(view, requirements, exclude) -> bool:
    """Is ``view`` left out only because its heartbeat is old? (Worth asking directly.)"""
    if view.up or view.forced_down or not view.registered or view.host in exclude:
        return False
    return _refusal(dataclasses.replace(view, up=True), requirements) is None


def _choose(conf, db, context, requirements, views, exclude) -> str:
    """:func:`pick_host` over the hosts ``views``, as read."""
    candidates, refused, hosts = [], [], {}
    for view in views:
        reason = exclude.get(view.host) or _refusal(view, requirements)
        if reason is None:
            hosts[view.host] = view
        else:
            refused.append(f"{view.host}: {reason}")
    used = instance_obj.flavor_totals_by_host(db, context, hosts)
    for host, view in hosts.items():
        reason = _no_room(view.capabilities, conf, used[host], requirements)
        if reason is None:
            candidates.append(host)
        else:
            refused.append(f"{host}: {reason}")
    if not candidates:
        wanted = list(requirements.needs) or "room"
        detail = f" ({'; '.join(refused)})" if refused else ""
        raise NoValidHost(reason=f"No up and enabled compute host has {wanted}{detail}.")
    load = instance_obj.count_by_host(db, context, candidates)
    return min(sorted(candidates), key=lambda host: load[host])


def place(conf, db, context, instance_uuid, requirements: Requirements,
          expected_task_state, probe=None) -> str:
    """Choose a host (:func:`pick_host`) and claim room on it for the instance; the host.

    The choice reads without locks; the claim
    (:func:`volumesvc.objects.instance.claim_host`) checks the room again
    under the host's lock and writes the instance's host in the same
    transaction. A host that another build filled in between is left out and
    the next one tried, so a storm of concurrent boots never holds more than
    a host's capacity. Raises NoValidHost when no host is left, and
    UnexpectedTaskStateError when the instance left ``expected_task_state``.
    ``probe``: as for :func:`pick_host`; each host is asked once per placement
    (a claim lost on an answering host does not ask the others again).
    """
    exclude: dict = {}
    answers: dict = {}

    def probe_once(host):
        if host not in answers:
            answers[host] = probe(host)
        return answers[host]

    while True:
        host = pick_host(conf, db, context, requirements, exclude=exclude,
                         probe=probe_once if probe is not None else None)
        reason = instance_obj.claim_host(
            db, context, instance_uuid, host,
            lambda caps, used: _no_room(caps, conf, used, requirements),
            expected_task_state)
        if reason is None:
            return host
        exclude[host] = reason
