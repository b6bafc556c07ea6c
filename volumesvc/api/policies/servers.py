"""Policies of /servers (Nova's names and defaults)."""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:servers:%s"
INDEX = PREFIX % "index"
DETAIL = PREFIX % "detail"
INDEX_ALL_TENANTS = PREFIX % "index:get_all_tenants"
DETAIL_ALL_TENANTS = PREFIX % "detail:get_all_tenants"
ALLOW_ALL_FILTERS = PREFIX % "allow_all_filters"
SHOW = PREFIX % "show"
SHOW_HOST_STATUS = PREFIX % "show:host_status"
CREATE = PREFIX % "create"
CREATE_ATTACH_VOLUME = PREFIX % "create:attach_volume"
CREATE_REQUESTED_DESTINATION = PREFIX % "create:requested_destination"
DELETE = PREFIX % "delete"
UPDATE = PREFIX % "update"
EXTENDED_ATTRIBUTES = "os_compute_api:os-extended-server-attributes"

_SERVERS = "/servers"
_SERVER = "/servers/{server_id}"


def _rule(name, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{"method": method, "path": path}], scope_types=["project"])


_RULES = [
    _rule(INDEX, base.PROJECT_READER_OR_ADMIN, "List servers.", "GET", _SERVERS),
    _rule(DETAIL, base.PROJECT_READER_OR_ADMIN, "List servers with details.", "GET",
          _SERVERS + "/detail"),
    _rule(INDEX_ALL_TENANTS, base.ADMIN, "List servers of all projects.", "GET", _SERVERS),
    _rule(DETAIL_ALL_TENANTS, base.ADMIN, "List servers of all projects with details.",
          "GET", _SERVERS + "/detail"),
    _rule(ALLOW_ALL_FILTERS, base.ADMIN,
          "Use every server list filter at every version (host, node, hostname, uuid, "
          "deleted, and the filters 2.83 opens to everyone).", "GET", _SERVERS),
    _rule(SHOW, base.PROJECT_READER_OR_ADMIN, "Show a server.", "GET", _SERVER),
    _rule(SHOW_HOST_STATUS, base.ADMIN,
          "Show host_status (2.16) in server show and list details.", "GET", _SERVER),
    _rule(EXTENDED_ATTRIBUTES, base.ADMIN,
          "Show the OS-EXT-SRV-ATTR attributes of servers.", "GET", _SERVER),
    _rule(CREATE, base.PROJECT_MEMBER_OR_ADMIN, "Create a server.", "POST", _SERVERS),
    _rule(CREATE_ATTACH_VOLUME, base.PROJECT_MEMBER_OR_ADMIN,
          "Create a server with block device mappings.", "POST", _SERVERS),
    _rule(CREATE_REQUESTED_DESTINATION, base.ADMIN,
          "Create a server on a given host or hypervisor (2.74 host and "
          "hypervisor_hostname).", "POST", _SERVERS),
    _rule(DELETE, base.PROJECT_MEMBER_OR_ADMIN, "Delete a server.", "DELETE", _SERVER),
    _rule(UPDATE, base.PROJECT_MEMBER_OR_ADMIN,
          "Update a server (name, description, hostname, pinned availability zone).",
          "PUT", _SERVER),
]


def list_rules():
    return _RULES
