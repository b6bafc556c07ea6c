"""Policies of /os-quota-sets and /limits (Nova's names and defaults).

A project's readers see its quotas and limits; only admins change them or
look at another project's limits. The defaults are public, as in Nova.
"""

from volumesvc.api.policies import base

SHOW = "os_compute_api:os-quota-sets:show"
DETAIL = "os_compute_api:os-quota-sets:detail"
DEFAULTS = "os_compute_api:os-quota-sets:defaults"
UPDATE = "os_compute_api:os-quota-sets:update"
DELETE = "os_compute_api:os-quota-sets:delete"
LIMITS = "os_compute_api:limits"
LIMITS_OTHER_PROJECT = "os_compute_api:limits:other_project"

_PATH = "/os-quota-sets/{tenant_id}"
_RULES = [
    base.project_rule(SHOW, base.PROJECT_READER_OR_ADMIN, "Show a project's quotas.",
                      "GET", _PATH),
    base.project_rule(DETAIL, base.PROJECT_READER_OR_ADMIN,
                      "Show a project's quotas with their usage.", "GET", f"{_PATH}/detail"),
    base.project_rule(DEFAULTS, "@", "Show the default quotas.", "GET", f"{_PATH}/defaults"),
    base.project_rule(UPDATE, base.ADMIN, "Set a project's (or a user's) quotas.",
                      "PUT", _PATH),
    base.project_rule(DELETE, base.ADMIN, "Revert a project's (or a user's) quotas to "
                      "the defaults.", "DELETE", _PATH),
    base.project_rule(LIMITS, "@", "Show the caller's project limits and usage.",
                      "GET", "/limits"),
    base.project_rule(LIMITS_OTHER_PROJECT, base.ADMIN,
                      "Show another project's limits (``tenant_id``).", "GET", "/limits"),
]


def list_rules():
    return _RULES
