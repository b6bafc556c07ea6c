"""Options of host selection by capacity (Nova's names, in [DEFAULT]).

The conductor places servers (volumesvc/conductor/scheduling.py): a host
takes a flavor while the flavors of its servers plus the new one fit in
what it reports times these ratios.
"""

from oslo_config import cfg

_OPTS = [
    cfg.FloatOpt(
        "cpu_allocation_ratio",
        default=4.0,
        min=0.0,
        help="""
vCPUs of flavors per physical CPU a compute may hold (Nova's default 4.0).
A host reporting 8 CPUs takes flavors of up to 32 vCPUs in total.
"""),
    cfg.FloatOpt(
        "ram_allocation_ratio",
        default=1.0,
        min=0.0,
        help="""
MiB of flavor RAM per MiB of host memory a compute may hold (Nova's default
1.0). Software-emulated test hosts whose guests are capped
(``[libvirt] guest_memory_cap_mb``) may set it far higher.
"""),
]


def register_opts(conf):
    conf.register_opts(_OPTS)


def list_opts():
    return [("DEFAULT", _OPTS)]
