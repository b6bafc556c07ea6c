"""Policies of /servers/{id}/metadata (Nova's names and 2023 defaults)."""

from volumesvc.api.policies import base

PREFIX = "os_compute_api:server-metadata:%s"
INDEX = PREFIX % "index"
SHOW = PREFIX % "show"
CREATE = PREFIX % "create"
UPDATE_ALL = PREFIX % "update_all"
UPDATE = PREFIX % "update"
DELETE = PREFIX % "delete"

_ALL = "/servers/{server_id}/metadata"
_ONE = "/servers/{server_id}/metadata/{key}"

_RULES = [
    base.project_rule(INDEX, base.PROJECT_READER_OR_ADMIN, "List a server's metadata.",
                      "GET", _ALL),
    base.project_rule(SHOW, base.PROJECT_READER_OR_ADMIN, "Show one metadata item.",
                      "GET", _ONE),
    base.project_rule(CREATE, base.PROJECT_MEMBER_OR_ADMIN,
                      "Add or change metadata items (merge).", "POST", _ALL),
    base.project_rule(UPDATE_ALL, base.PROJECT_MEMBER_OR_ADMIN,
                      "Replace all metadata of a server.", "PUT", _ALL),
    base.project_rule(UPDATE, base.PROJECT_MEMBER_OR_ADMIN, "Set one metadata item.",
                      "PUT", _ONE),
    base.project_rule(DELETE, base.PROJECT_MEMBER_OR_ADMIN, "Delete one metadata item.",
                      "DELETE", _ONE),
]


def list_rules():
    return _RULES
