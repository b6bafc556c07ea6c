"""Policies of /flavors.

Listing and showing flavors is open to every authenticated caller (Nova has
no rule for it; ours exist so every handler checks one). Creating and
deleting are admin only (Nova's os-flavor-manage). Whether 2.61 responses
carry ``extra_specs`` is decided by Nova's extra-specs index rule.
"""

from oslo_policy import policy

from volumesvc.api.policies import base

LIST = "os_compute_api:flavors:list"
SHOW = "os_compute_api:flavors:show"
CREATE = "os_compute_api:os-flavor-manage:create"
DELETE = "os_compute_api:os-flavor-manage:delete"
EXTRA_SPECS_INDEX = "os_compute_api:os-flavor-extra-specs:index"
EXTRA_SPECS_SHOW = "os_compute_api:os-flavor-extra-specs:show"

_RULES = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str="@",
        description="List flavors (every authenticated caller).",
        operations=[{"method": "GET", "path": "/flavors"},
                    {"method": "GET", "path": "/flavors/detail"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str="@",
        description="Show a flavor (every authenticated caller).",
        operations=[{"method": "GET", "path": "/flavors/{flavor_id}"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.ADMIN,
        description="Create a flavor.",
        operations=[{"method": "POST", "path": "/flavors"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description="Delete a flavor.",
        operations=[{"method": "DELETE", "path": "/flavors/{flavor_id}"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=EXTRA_SPECS_INDEX, check_str=base.PROJECT_READER_OR_ADMIN,
        description="See flavor extra specs (in flavor responses from 2.61).",
        operations=[{"method": "GET", "path": "/flavors/{flavor_id}"},
                    {"method": "GET", "path": "/flavors/detail"},
                    {"method": "GET", "path": "/flavors/{flavor_id}/os-extra_specs"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=EXTRA_SPECS_SHOW, check_str=base.PROJECT_READER_OR_ADMIN,
        description="Show one flavor extra spec.",
        operations=[{"method": "GET",
                     "path": "/flavors/{flavor_id}/os-extra_specs/{key}"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
