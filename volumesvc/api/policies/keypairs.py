"""Policies of /os-keypairs (Nova's names and defaults).

Key pairs belong to a user, not a project: every rule is "an admin, or the
user the key pair belongs to", checked against the target's ``user_id``
(the caller's own unless an admin names another user, 2.10).
"""

from volumesvc.api.policies import base

_ADMIN_OR_OWNER = f"({base.ADMIN}) or user_id:%(user_id)s"

INDEX = "os_compute_api:os-keypairs:index"
CREATE = "os_compute_api:os-keypairs:create"
SHOW = "os_compute_api:os-keypairs:show"
DELETE = "os_compute_api:os-keypairs:delete"

_RULES = [
    base.project_rule(INDEX, _ADMIN_OR_OWNER, "List a user's key pairs.",
                      "GET", "/os-keypairs"),
    base.project_rule(CREATE, _ADMIN_OR_OWNER, "Create or import a key pair.",
                      "POST", "/os-keypairs"),
    base.project_rule(SHOW, _ADMIN_OR_OWNER, "Show a key pair.",
                      "GET", "/os-keypairs/{keypair_name}"),
    base.project_rule(DELETE, _ADMIN_OR_OWNER, "Delete a key pair.",
                      "DELETE", "/os-keypairs/{keypair_name}"),
]


def list_rules():
    return _RULES
