"""Policy of the ``os-migrateLive`` server action (Nova's name; admin only)."""

from oslo_policy import policy

from volumesvc.api.policies import base

MIGRATE_LIVE = "os_compute_api:os-migrate-server:migrate_live"

_RULES = [
    policy.DocumentedRuleDefault(
        name=MIGRATE_LIVE, check_str=base.ADMIN,
        description="Live-migrate a server to another host without stopping it.",
        operations=[{"method": "POST",
                     "path": "/servers/{server_id}/action (os-migrateLive)"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
