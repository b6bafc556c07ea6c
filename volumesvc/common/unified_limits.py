"""Keystone's unified limits of a project, read through oslo.limit (the one adapter for them).

Used when ``[quota] driver = unified_limits``: the instances, cores and ram
limits are Keystone's limits of the resources ``servers``, ``class:VCPU``
and ``class:MEMORY_MB`` (Nova's names) for the endpoint of ``[oslo_limit]``.
Only the limits are read here; usage is counted by ``volumesvc/quota.py``
from the database under the project's lock, which is what keeps concurrent
boots from passing a limit (oslo.limit's own ``enforce`` counts without
such a lock).

Why the module swaps oslo.limit's configuration: the library reads the
process-global ``cfg.CONF``, which volumesvc never parses (each service
builds its own ``ConfigOpts``). The enforcer is built against the service's
configuration, once per configuration object, and reused.
"""

import threading

from oslo_limit import limit as oslo_limit

# volumesvc resource → Keystone resource name.
RESOURCES = {"instances": "servers", "cores": "class:VCPU", "ram": "class:MEMORY_MB"}

_LOCK = threading.Lock()
_ENFORCERS: dict = {}


def _no_usage(project_id, resource_names):
    # NOTE: never called: only limits are read through the enforcer.
    return dict.fromkeys(resource_names, 0)


def _enforcer(conf):
    with _LOCK:
        # NOTE: the entry keeps ``conf`` alive, so its id is never reused.
        entry = _ENFORCERS.get(id(conf))
        if entry is None or entry[0] is not conf:
            oslo_limit.CONF = conf
            # cache=False: a limit changed in Keystone applies to the next boot.
            entry = _ENFORCERS[id(conf)] = (conf, oslo_limit.Enforcer(_no_usage, cache=False))
        return entry[1]


def _by_our_names(pairs) -> dict:
    ours = {theirs: name for name, theirs in RESOURCES.items()}
    return {ours[name]: int(value) for name, value in pairs if name in ours}


def project_limits(conf, project_id) -> dict:
    """``{"instances", "cores", "ram"}`` of the project: its own limit, else the registered one.

    A resource Keystone has no limit for is 0, as oslo.limit reads it.
    """
    return _by_our_names(_enforcer(conf).get_project_limits(
        project_id, list(RESOURCES.values())))


def registered_limits(conf) -> dict:
    """The registered (default) limits of the three resources; 0 where none is registered."""
    return _by_our_names(_enforcer(conf).get_registered_limits(list(RESOURCES.values())))
