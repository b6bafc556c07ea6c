"""Policies of POST /servers/{id}/action (Nova's rule names)."""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:servers:%s"
REBOOT = PREFIX % "reboot"
CREATE_IMAGE = PREFIX % "create_image"
CREATE_IMAGE_VOLUME_BACKED = PREFIX % "create_image:allow_volume_backed"

_ACTION_PATH = "/servers/{server_id}/action"

_RULES = [
    policy.DocumentedRuleDefault(
        name=REBOOT, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Reboot a server (reboot action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (reboot)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=CREATE_IMAGE, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Create an image from a server (createImage action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (createImage)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=CREATE_IMAGE_VOLUME_BACKED, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Create an image from a volume-backed server (volume snapshots).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (createImage)"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
