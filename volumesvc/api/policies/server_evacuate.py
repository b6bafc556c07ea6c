"""Policy of the ``evacuate`` server action (Nova's name; admin only)."""

from oslo_policy import policy

from volumesvc.api.policies import base

EVACUATE = "os_compute_api:os-evacuate"

_RULES = [
    policy.DocumentedRuleDefault(
        name=EVACUATE, check_str=base.ADMIN,
        description="Evacuate a server from a failed host to a new host.",
        operations=[{"method": "POST", "path": "/servers/{server_id}/action (evacuate)"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
