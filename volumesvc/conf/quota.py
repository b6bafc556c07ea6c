"""Options in [quota]: the default limits of every project (Nova's names and defaults).

A project (or a user inside it) gets other limits through
``PUT /os-quota-sets/{project_id}``; these are what applies where no limit
was set. ``-1`` means unlimited. Usage is counted from the database at each
check (doc/source/admin/quotas.rst), so there is nothing to resynchronise.
"""

from oslo_config import cfg

GROUP = "quota"

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

_OPTS = [cfg.IntOpt(name, default=default, min=-1,
                    help=f"Default limit of {what}; -1 is unlimited.")
         for name, default, what in _LIMITS]

RESOURCES = tuple(name for name, _, _ in _LIMITS)


def register_opts(conf):
    conf.register_opts(_OPTS, group=GROUP)


def list_opts():
    return [(GROUP, _OPTS)]
