"""Policies of /servers/{id}/ips (Nova's rule names and defaults)."""

from volumesvc.api.policies import base

PREFIX = "os_compute_api:ips:%s"
INDEX = PREFIX % "index"
SHOW = PREFIX % "show"

_PATH = "/servers/{server_id}/ips"

_RULES = [
    base.project_rule(INDEX, base.PROJECT_READER_OR_ADMIN,
                      "List the addresses of a server by network.", "GET", _PATH),
    base.project_rule(SHOW, base.PROJECT_READER_OR_ADMIN,
                      "Show the addresses of a server on one network.", "GET",
                      _PATH + "/{network_label}"),
]


def list_rules():
    return _RULES
