"""[upgrade_levels]: RPC version caps for rolling upgrades."""

import copy

from oslo_config import cfg

upgrade_group = cfg.OptGroup(
    "upgrade_levels",
    title="RPC version caps",
    help="""
Caps on the RPC versions services send, so old and new services can run side
by side during a rolling upgrade. Leave unset outside an upgrade.
""")

upgrade_opts = [
    cfg.StrOpt(
        "conductor",
        help="""
Highest conductor RPC version to send, for example ``1.0``.

Possible values:

* Unset: send the newest version this code knows.
* A version string: methods newer than it are refused locally (the API then
  answers 503 for features that need them).
"""),
    cfg.StrOpt(
        "compute",
        help="""
Highest compute RPC version to send, for example ``1.0``, or ``auto``.

Possible values:

* Unset: send the newest version this code knows.
* ``auto``: the newest version the oldest compute speaks, read from the
  computes' service versions when the API, conductor or volumesvc-manage
  starts (restart them once the last old compute is upgraded). Before any
  compute has reported, the newest version.
* A version string.
"""),
]


def register_opts(conf):
    # NOTE: a deep copy per ConfigOpts: oslo.config shares a registered
    # OptGroup's options between confs, so overrides would leak across them.
    group = copy.deepcopy(upgrade_group)
    conf.register_group(group)
    conf.register_opts(upgrade_opts, group=group)


def list_opts():
    return [(upgrade_group, upgrade_opts)]
