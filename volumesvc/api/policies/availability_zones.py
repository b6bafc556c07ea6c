"""Policies of /os-availability-zone (Nova's names and defaults).

Every caller may list the zones (clients offer them at boot); only admins
see which hosts and services are in them.
"""

from volumesvc.api.policies import base

LIST = "os_compute_api:os-availability-zone:list"
DETAIL = "os_compute_api:os-availability-zone:detail"

_RULES = [
    base.project_rule(LIST, "@", "List availability zones.", "GET", "/os-availability-zone"),
    base.project_rule(DETAIL, base.ADMIN, "List availability zones with their hosts and "
                      "services.", "GET", "/os-availability-zone/detail"),
]


def list_rules():
    return _RULES
