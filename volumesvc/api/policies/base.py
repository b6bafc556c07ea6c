"""Base check strings every resource policy builds on (Nova's names)."""

from oslo_policy import policy

ADMIN = "rule:context_is_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
SERVICE_OR_ADMIN = "rule:service_or_admin"
# Before the 2023 defaults: any role in the owning project, or an admin.
# Only used with ``[oslo_policy] enforce_new_defaults = false``.
LEGACY_ADMIN_OR_OWNER = "is_admin:True or project_id:%(project_id)s"

_RULES = [
    policy.RuleDefault(
        "context_is_admin", "role:admin",
        "Decides what is required for the 'is_admin:True' check to succeed."),
    policy.RuleDefault(
        "admin_api", "role:admin",
        "Default rule for administrative APIs."),
    policy.RuleDefault(
        "project_reader", "role:reader and project_id:%(project_id)s",
        "Reader of the project that owns the target."),
    policy.RuleDefault(
        "project_member", "role:member and project_id:%(project_id)s",
        "Member of the project that owns the target."),
    policy.RuleDefault(
        "project_reader_or_admin", "rule:project_reader or rule:context_is_admin",
        "Project reader or an admin of any project."),
    policy.RuleDefault(
        "project_member_or_admin", "rule:project_member or rule:context_is_admin",
        "Project member or an admin of any project."),
    policy.RuleDefault(
        "service_api", "role:service",
        "A service user (Cinder calling back, for example)."),
    policy.RuleDefault(
        "service_or_admin", "rule:service_api or rule:context_is_admin",
        "A service user or an admin."),
]


def project_rule(name, check_str, description, method, path):
    """A documented project-scoped rule for one operation (the common case)."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{"method": method, "path": path}], scope_types=["project"])


def list_rules():
    return _RULES
