"""The quota-set and limits representations per microversion (one table each).

Resources of a quota set: everything of ``[quota]`` plus, before 2.36,
Nova's network quotas (``fixed_ips``, ``floating_ips``, ``security_groups``,
``security_group_rules``) with Nova's constant values, since volumesvc
manages no networks; 2.57 drops the injected-file quotas. The same rows
give ``/limits``' ``absolute`` keys (2.36 drops the network ones, 2.39
``maxImageMeta``, 2.57 ``maxPersonality*``).
"""

from volumesvc.api import microversions as mv
from volumesvc.api.representation import Field, Representation
from volumesvc.api.validation import object_

SHOW, UPDATE, DETAIL = "show", "update", "detail"
_INT = {"type": "integer"}
_DETAIL_ITEM = object_({"in_use": _INT, "limit": _INT, "reserved": _INT},
                       required=["in_use", "limit", "reserved"])
_BEFORE_2_36 = mv.before(mv.V2_36_NO_PROXY_APIS)
_BEFORE_2_57 = mv.before(mv.V2_57_REBUILD_USER_DATA)
# Nova's values of the network quotas it still shows before 2.36.
NETWORK_QUOTAS = {"fixed_ips": -1, "floating_ips": 10, "security_group_rules": 20,
                  "security_groups": 10}

# (resource, last version it is shown at): Nova's alphabetical key order.
RESOURCE_WINDOWS = (
    ("cores", None), ("fixed_ips", _BEFORE_2_36), ("floating_ips", _BEFORE_2_36),
    ("injected_file_content_bytes", _BEFORE_2_57), ("injected_file_path_bytes", _BEFORE_2_57),
    ("injected_files", _BEFORE_2_57), ("instances", None), ("key_pairs", None),
    ("metadata_items", None), ("ram", None), ("security_group_rules", _BEFORE_2_36),
    ("security_groups", _BEFORE_2_36), ("server_group_members", None),
    ("server_groups", None),
)


def resources_at(version) -> list[str]:
    return [name for name, last in RESOURCE_WINDOWS if last is None or version <= last]


def _limit(name):
    return lambda q, ctx: q["limits"][name]


def _detail(name):
    return lambda q, ctx: {"in_use": q["usage"].get(name, 0), "limit": q["limits"][name],
                           "reserved": 0}


def _rows(value, schema, views):
    return tuple(Field(name, schema, value(name), last=last, views=views)
                 for name, last in RESOURCE_WINDOWS)


QUOTA_SET = Representation("quota_set", (
    Field("id", {"type": "string"}, lambda q, ctx: q["id"], views=(SHOW, DETAIL)),
    *_rows(_limit, _INT, (SHOW, UPDATE)),
    *_rows(_detail, _DETAIL_ITEM, (DETAIL,)),
))


def render(req, project_id, limits, usage=None, view=SHOW) -> dict:
    source = {"id": project_id, "limits": dict(NETWORK_QUOTAS, **limits),
              "usage": usage or {}}
    return QUOTA_SET.render(req.version, source, view=view)


def _absolute(key, resource, last=None):
    return Field(key, _INT, lambda q, ctx: q["limits"][resource], last=last)


def _used(key, resource, last=None):
    return Field(key, _INT, lambda q, ctx: q["usage"].get(resource, 0), last=last)


def _zero(key, last):
    return Field(key, _INT, lambda q, ctx: 0, last=last)


ABSOLUTE = Representation("absolute", (
    _absolute("maxImageMeta", "metadata_items", mv.before(mv.V2_39_NO_IMAGE_METADATA_LIMIT)),
    _absolute("maxPersonality", "injected_files", _BEFORE_2_57),
    _absolute("maxPersonalitySize", "injected_file_content_bytes", _BEFORE_2_57),
    _absolute("maxSecurityGroupRules", "security_group_rules", _BEFORE_2_36),
    _absolute("maxSecurityGroups", "security_groups", _BEFORE_2_36),
    _absolute("maxServerGroupMembers", "server_group_members"),
    _absolute("maxServerGroups", "server_groups"),
    _absolute("maxServerMeta", "metadata_items"),
    _absolute("maxTotalCores", "cores"),
    _absolute("maxTotalFloatingIps", "floating_ips", _BEFORE_2_36),
    _absolute("maxTotalInstances", "instances"),
    _absolute("maxTotalKeypairs", "key_pairs"),
    _absolute("maxTotalRAMSize", "ram"),
    _used("totalCoresUsed", "cores"),
    _zero("totalFloatingIpsUsed", _BEFORE_2_36),
    _used("totalInstancesUsed", "instances"),
    _used("totalRAMUsed", "ram"),
    _zero("totalSecurityGroupsUsed", _BEFORE_2_36),
    _used("totalServerGroupsUsed", "server_groups"),
))


def render_absolute(req, limits, usage) -> dict:
    return ABSOLUTE.render(req.version, {"limits": dict(NETWORK_QUOTAS, **limits),
                                         "usage": usage})
