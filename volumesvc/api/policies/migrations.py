"""Policy of GET /os-migrations (Nova's rule name; admin only by default)."""

from volumesvc.api.policies import base

INDEX = "os_compute_api:os-migrations:index"


def list_rules():
    return [base.project_rule(INDEX, base.ADMIN, "List the migrations of every server.",
                              "GET", "/os-migrations")]
