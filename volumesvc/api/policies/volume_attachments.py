"""Policies of /servers/{id}/os-volume_attachments (Nova's rule names and defaults)."""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:os-volumes-attachments:%s"
INDEX = PREFIX % "index"
SHOW = PREFIX % "show"
CREATE = PREFIX % "create"
UPDATE = PREFIX % "update"
SWAP = PREFIX % "swap"
DELETE = PREFIX % "delete"

_PATH = "/servers/{server_id}/os-volume_attachments"
_ONE = _PATH + "/{volume_id}"


def _rule(name, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{"method": method, "path": path}], scope_types=["project"])


_RULES = [
    _rule(INDEX, base.PROJECT_READER_OR_ADMIN, "List the volume attachments of a server.",
          "GET", _PATH),
    _rule(SHOW, base.PROJECT_READER_OR_ADMIN, "Show one volume attachment of a server.",
          "GET", _ONE),
    _rule(CREATE, base.PROJECT_MEMBER_OR_ADMIN, "Attach a volume to a server.",
          "POST", _PATH),
    _rule(UPDATE, base.PROJECT_MEMBER_OR_ADMIN,
          "Update a volume attachment (delete_on_termination, 2.85).", "PUT", _ONE),
    _rule(SWAP, base.SERVICE_OR_ADMIN,
          "Swap the volume of an attachment (Cinder's volume migration).", "PUT", _ONE),
    _rule(DELETE, base.PROJECT_MEMBER_OR_ADMIN, "Detach a volume from a server.",
          "DELETE", _ONE),
]


def list_rules():
    return _RULES
