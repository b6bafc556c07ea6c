"""Options in [quota]: the default limits of every project (Nova's names and defaults).

A project (or a user inside it) gets other limits through
``PUT /os-quota-sets/{project_id}``; these are what applies where no limit
was set. ``-1`` means unlimited. Usage is counted from the database at each
check (doc/source/admin/quotas.rst), so there is nothing to resynchronise.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from volumesvc.conf import ksa

GROUP = "quota"
LIMIT_GROUP = "oslo_limit"
DATABASE, UNIFIED_LIMITS = "database", "unified_limits"

# (option, default, what it bounds); the option name is the quota resource.
_LIMITS = (
    ("instances", 10, "servers per project"),
    ("cores", 20, "vCPUs (the flavors' vcpus summed) per project"),
    ("ram", 51200, "MiB of RAM (the flavors' ram summed) per project"),
    ("metadata_items", 128, "metadata items per server"),
    ("injected_files", 5, "injected files per server (kept for clients; volumesvc "
                          "injects no files)"),
    ("injected_file_content_bytes", 10240, "bytes per injected file"),
    ("injected_file_path_bytes", 255, "bytes per injected file path"),
    ("key_pairs", 100, "key pairs per user"),
    ("server_groups", 10, "server groups per project (kept for clients)"),
    ("server_group_members", 10, "servers per server group (kept for clients)"),
)

_OPTS: list[cfg.Opt] = [cfg.IntOpt(name, default=default, min=-1,
                                   help=f"Default limit of {what}; -1 is unlimited.")
         for name, default, what in _LIMITS]

_OPTS.append(cfg.StrOpt(
    "driver",
    default=DATABASE,
    choices=[(DATABASE, "limits of the options above and of PUT /os-quota-sets, kept in "
                        "volumesvc's database"),
             (UNIFIED_LIMITS, "instances, cores and ram limits from Keystone's unified "
                              "limits (registered and project limits) through oslo.limit")],
    help="""
Where the instances, cores and ram limits come from (Nova's ``[quota]
driver``, ``nova.quota.UnifiedLimitsDriver`` being ``unified_limits`` here).

With ``unified_limits`` the limits are Keystone's: the resources ``servers``,
``class:VCPU`` and ``class:MEMORY_MB`` of the endpoint configured in
``[oslo_limit]``, a project limit where Keystone has one, else the registered
limit, and 0 (nothing allowed) where Keystone has neither. Usage is still
counted from volumesvc's database under the per-project lock, so concurrent
boots cannot pass the limit. ``PUT``/``DELETE /os-quota-sets`` are refused
(400): limits are changed in Keystone. The other resources keep the
defaults above.

Related options:

* ``[oslo_limit]``: the Keystone credentials and the endpoint whose limits
  apply (``endpoint_id``, or ``endpoint_service_type`` and friends).
"""))

# [oslo_limit]: oslo.limit's endpoint options (the library registers them on
# the global configuration, which volumesvc does not use) and keystoneauth's.
_ENDPOINT_OPTS = [
    cfg.StrOpt("endpoint_id", help="Id of this compute endpoint in Keystone's catalog, "
                                   "whose unified limits apply."),
    cfg.StrOpt("endpoint_service_name", help="Service name to find the endpoint by."),
    cfg.StrOpt("endpoint_service_type", help="Service type to find the endpoint by."),
    cfg.StrOpt("endpoint_region_name", help="Region of the endpoint."),
    cfg.StrOpt("endpoint_interface", default="public",
               choices=["public", "publicURL", "internal", "internalURL", "admin",
                        "adminURL"],
               help="Interface of the endpoint to find."),
]

RESOURCES = tuple(name for name, _, _ in _LIMITS)


def register_opts(conf):
    conf.register_opts(_OPTS, group=GROUP)
    conf.register_opts(_ENDPOINT_OPTS, group=LIMIT_GROUP)
    ksa.register_group_opts(conf, LIMIT_GROUP)
    # How oslo.limit reaches Keystone's API (valid_interfaces, region...).
    ks_loading.register_adapter_conf_options(conf, LIMIT_GROUP, include_deprecated=False)


def list_opts():
    return [(GROUP, _OPTS), (LIMIT_GROUP, _ENDPOINT_OPTS + ksa.group_opts()
                             + ks_loading.get_adapter_conf_options(include_deprecated=False))]
