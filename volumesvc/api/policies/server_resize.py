"""Policies of ``resize``, ``confirmResize``, ``revertResize`` (the server's project)
and ``migrate`` (admin), with Nova's names."""

from oslo_policy import policy

from volumesvc.api.policies import base

RESIZE = "os_compute_api:servers:resize"
CONFIRM_RESIZE = "os_compute_api:servers:confirm_resize"
REVERT_RESIZE = "os_compute_api:servers:revert_resize"
MIGRATE = "os_compute_api:os-migrate-server:migrate"
MIGRATE_HOST = "os_compute_api:os-migrate-server:migrate:host"


def _action(name, check, description, action):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{"method": "POST", "path": f"/servers/{{server_id}}/action ({action})"}],
        scope_types=["project"])


_RULES = [
    _action(RESIZE, base.PROJECT_MEMBER_OR_ADMIN,
            "Resize a server to another flavor (it may move to another host).", "resize"),
    _action(CONFIRM_RESIZE, base.PROJECT_MEMBER_OR_ADMIN,
            "Confirm a resize or cold migration: the server keeps its new host and flavor.",
            "confirmResize"),
    _action(REVERT_RESIZE, base.PROJECT_MEMBER_OR_ADMIN,
            "Revert a resize or cold migration: back to the old host and flavor.",
            "revertResize"),
    _action(MIGRATE, base.ADMIN, "Cold-migrate a server to another host.", "migrate"),
    _action(MIGRATE_HOST, base.ADMIN,
            "Cold-migrate a server to a host the caller names (2.56).", "migrate"),
]


def list_rules():
    return _RULES
