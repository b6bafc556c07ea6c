"""[conductor]: the orchestration service."""

from oslo_config import cfg

conductor_group = cfg.OptGroup(
    "conductor", title="Conductor options",
    help="Options for volumesvc-conductor, which runs multi-step workflows "
         "and persists state on behalf of computes.")

conductor_opts = [
    cfg.StrOpt(
        "topic",
        default="conductor",
        help="RPC topic the conductors listen on. Change only to run two "
             "independent deployments on one message bus."),
]


def register_opts(conf):
    conf.register_group(conductor_group)
    conf.register_opts(conductor_opts, group=conductor_group)


def list_opts():
    return [(conductor_group, conductor_opts)]
