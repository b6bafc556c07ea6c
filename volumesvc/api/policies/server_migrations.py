"""Policies of /servers/{id}/migrations (Nova's rule names; admin only by default)."""

from volumesvc.api.policies import base

PREFIX = "os_compute_api:servers:migrations:%s"
_ALL = "/servers/{server_id}/migrations"
_ONE = _ALL + "/{migration_id}"

# rule suffix -> (check string, description, method, path)
_TABLE = {
    "index": (base.ADMIN, "List the in-progress live migrations of a server.", "GET", _ALL),
    "show": (base.ADMIN, "Show an in-progress live migration of a server.", "GET", _ONE),
    "delete": (base.ADMIN, "Abort an in-progress live migration of a server.", "DELETE",
               _ONE),
    "force_complete": (base.ADMIN, "Force an in-progress live migration of a server to "
                       "complete.", "POST", _ONE + "/action (force_complete)"),
}
INDEX, SHOW, DELETE, FORCE_COMPLETE = (PREFIX % name for name in _TABLE)


def list_rules():
    return [base.project_rule(PREFIX % name, *entry) for name, entry in _TABLE.items()]
