"""Policies of /servers/{id}/tags (API 2.26; Nova's names and 2023 defaults).

Reads are for project readers, changes for project members (admins always).
"""

from volumesvc.api.policies import base

PREFIX = "os_compute_api:os-server-tags:%s"
_ALL = "/servers/{server_id}/tags"
_ONE = _ALL + "/{tag}"

# rule suffix -> (check string, description, method, path)
_TABLE = {
    "index": (base.PROJECT_READER_OR_ADMIN, "List a server's tags.", "GET", _ALL),
    "show": (base.PROJECT_READER_OR_ADMIN, "Check whether a server has a tag.", "GET", _ONE),
    "update": (base.PROJECT_MEMBER_OR_ADMIN, "Add one tag to a server.", "PUT", _ONE),
    "update_all": (base.PROJECT_MEMBER_OR_ADMIN, "Replace all tags of a server.", "PUT",
                   _ALL),
    "delete": (base.PROJECT_MEMBER_OR_ADMIN, "Remove one tag from a server.", "DELETE", _ONE),
    "delete_all": (base.PROJECT_MEMBER_OR_ADMIN, "Remove every tag of a server.", "DELETE",
                   _ALL),
}
INDEX, SHOW, UPDATE, UPDATE_ALL, DELETE, DELETE_ALL = (PREFIX % name for name in _TABLE)


def list_rules():
    return [base.project_rule(PREFIX % name, *entry) for name, entry in _TABLE.items()]
