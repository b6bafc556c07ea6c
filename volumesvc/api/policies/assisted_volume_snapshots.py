"""Policies of /os-assisted-volume-snapshots (Nova's rule names and defaults).

Only Cinder's remotefs volume drivers call these (with a service token, or
an admin's), so both default to ``service_or_admin``.
"""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:os-assisted-volume-snapshots:%s"
CREATE = PREFIX % "create"
DELETE = PREFIX % "delete"

_RULES = [
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.SERVICE_OR_ADMIN,
        description="Create an assisted volume snapshot (Cinder remotefs drivers).",
        operations=[{"method": "POST", "path": "/os-assisted-volume-snapshots"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.SERVICE_OR_ADMIN,
        description="Delete an assisted volume snapshot (Cinder remotefs drivers).",
        operations=[{"method": "DELETE",
                     "path": "/os-assisted-volume-snapshots/{snapshot_id}"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
