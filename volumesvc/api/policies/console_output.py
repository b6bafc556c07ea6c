"""Policy of the os-getConsoleOutput server action (Nova's name and default)."""

from oslo_policy import policy

from volumesvc.api.policies import base

CONSOLE_OUTPUT = "os_compute_api:os-console-output"

_RULES = [
    policy.DocumentedRuleDefault(
        name=CONSOLE_OUTPUT, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Show console output for a server.",
        operations=[{"method": "POST",
                     "path": "/servers/{server_id}/action (os-getConsoleOutput)"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
