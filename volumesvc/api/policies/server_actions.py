"""Policies of POST /servers/{id}/action (Nova's rule names)."""

from oslo_policy import policy

from volumesvc.api.policies import base

PREFIX = "os_compute_api:servers:%s"
REBOOT = PREFIX % "reboot"
CREATE_IMAGE = PREFIX % "create_image"
CREATE_IMAGE_VOLUME_BACKED = PREFIX % "create_image:allow_volume_backed"
STOP = PREFIX % "stop"
START = PREFIX % "start"
REBUILD = PREFIX % "rebuild"
REBUILD_TRUSTED_CERTS = PREFIX % "rebuild:trusted_certs"
SHELVE = "os_compute_api:os-shelve:shelve"
SHELVE_OFFLOAD = "os_compute_api:os-shelve:shelve_offload"
UNSHELVE = "os_compute_api:os-shelve:unshelve"
UNSHELVE_TO_HOST = "os_compute_api:os-shelve:unshelve_to_host"

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
    policy.DocumentedRuleDefault(
        name=STOP, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Stop a server (os-stop action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (os-stop)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=START, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Start a stopped server (os-start action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (os-start)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=REBUILD, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Rebuild a volume-backed server (rebuild action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (rebuild)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=REBUILD_TRUSTED_CERTS, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Name trusted image certificates on rebuild (2.63; refused for "
                    "volume-backed servers, which are all volumesvc rebuilds).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (rebuild)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=SHELVE, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Shelve a volume-backed server (shelve action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (shelve)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=SHELVE_OFFLOAD, check_str=base.ADMIN,
        description="Offload a shelved server from its host (shelveOffload action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (shelveOffload)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=UNSHELVE, check_str=base.PROJECT_MEMBER_OR_ADMIN,
        description="Unshelve a shelved or shelved-offloaded server (unshelve action).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (unshelve)"}],
        scope_types=["project"]),
    policy.DocumentedRuleDefault(
        name=UNSHELVE_TO_HOST, check_str=base.ADMIN,
        description="Unshelve a shelved-offloaded server to a named host (2.91).",
        operations=[{"method": "POST", "path": _ACTION_PATH + " (unshelve)"}],
        scope_types=["project"]),
]


def list_rules():
    return _RULES
