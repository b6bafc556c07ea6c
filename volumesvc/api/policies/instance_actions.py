"""Policies of /servers/{id}/os-instance-actions (Nova's rule names and defaults)."""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:os-instance-actions:%s"
LIST = PREFIX % "list"
SHOW = PREFIX % "show"
EVENTS = PREFIX % "events"
EVENTS_DETAILS = PREFIX % "events:details"

_PATH = "/servers/{server_id}/os-instance-actions"

_RULES = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.PROJECT_READER_OR_ADMIN,
        description="List the actions of a server.",
        operations=[{"method": "GET", "path": _PATH}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.PROJECT_READER_OR_ADMIN,
        description="Show one action of a server.",
        operations=[{"method": "GET", "path": _PATH + "/{request_id}"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=EVENTS, check_str=base.ADMIN,
        description="See every event detail of an action, traceback and host included "
                    "(owners see events without them from 2.51).",
        operations=[{"method": "GET", "path": _PATH + "/{request_id}"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=EVENTS_DETAILS, check_str=base.PROJECT_READER_OR_ADMIN,
        description="See the details of action events (2.84).",
        operations=[{"method": "GET", "path": _PATH + "/{request_id}"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
