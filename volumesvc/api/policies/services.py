"""Policies of /os-services (admin only, as in Nova)."""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:os-services:%s"
LIST = PREFIX % "list"
UPDATE = PREFIX % "update"
DELETE = PREFIX % "delete"

_RULES = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.ADMIN,
        description="List all running compute services.",
        operations=[{"method": "GET", "path": "/os-services"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.ADMIN,
        description="Update a compute service (enable, disable, force down).",
        operations=[{"method": "PUT", "path": "/os-services/{service_id}"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description="Delete a compute service.",
        operations=[{"method": "DELETE", "path": "/os-services/{service_id}"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
