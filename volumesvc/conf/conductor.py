"""[conductor]: the orchestration service."""

import copy

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
    cfg.IntOpt(
        "abandoned_snapshot_cleanup_interval",
        default=600,
        min=0,
        help="""
Seconds between two runs of the conductor task that deletes the Cinder
snapshots a failed createImage could not delete in time (marked with the
metadata ``volumesvc_undo = delete``) once Cinder allows it. Each run lists
the ``available`` and ``error`` snapshots of every project. 0 turns the task
off; marked snapshots then stay until an operator deletes them.

Related options:

* ``[cinder] snapshot_undo_timeout``
"""),
]


def register_opts(conf):
    # NOTE: a deep copy per ConfigOpts: oslo.config shares a registered
    # OptGroup's options between confs, so overrides would leak across them.
    group = copy.deepcopy(conductor_group)
    conf.register_group(group)
    conf.register_opts(conductor_opts, group=group)


def list_opts():
    return [(conductor_group, conductor_opts)]
