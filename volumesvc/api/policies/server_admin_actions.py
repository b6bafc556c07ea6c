"""Policies of the lock, unlock and os-resetState server actions (Nova's names)."""

from oslo_policy import policy

from volumesvc.api.policies import base

LOCK = "os_compute_api:os-lock-server:lock"
UNLOCK = "os_compute_api:os-lock-server:unlock"
UNLOCK_OVERRIDE = "os_compute_api:os-lock-server:unlock:unlock_override"
RESET_STATE = "os_compute_api:os-admin-actions:reset_state"

_ACTION = "/servers/{server_id}/action (%s)"


def _rule(name, check_str, description, action):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{"method": "POST", "path": _ACTION % action}], scope_types=["project"])


_RULES = [
    _rule(LOCK, base.PROJECT_MEMBER_OR_ADMIN, "Lock a server.", "lock"),
    _rule(UNLOCK, base.PROJECT_MEMBER_OR_ADMIN, "Unlock a server.", "unlock"),
    _rule(UNLOCK_OVERRIDE, base.ADMIN,
          "Unlock a server that someone else locked: an admin's lock, for its owner, or "
          "the owner's lock, for an admin of another project.", "unlock"),
    _rule(RESET_STATE, base.ADMIN, "Reset a server's state to active or error.",
          "os-resetState"),
]


def list_rules():
    return _RULES
