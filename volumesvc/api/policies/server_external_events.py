"""Policy of POST /os-server-external-events (Nova's rule name and default)."""

from oslo_policy import policy

from volumesvc.api.policies import base

CREATE = "os_compute_api:os-server-external-events:create"

_RULES = [
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.SERVICE_OR_ADMIN,
        description="Send external events to servers (Cinder's volume-extended, "
                    "Neutron's network events, Ironic's power-update).",
        operations=[{"method": "POST", "path": "/os-server-external-events"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
