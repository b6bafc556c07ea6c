"""[compute]: the per-host agent."""

import copy

from oslo_config import cfg

compute_group = cfg.OptGroup(
    "compute", title="Compute agent options",
    help="Options for volumesvc-compute, the per-hypervisor agent.")

compute_opts = [
    cfg.StrOpt(
        "topic",
        default="compute",
        help="RPC topic the compute agents listen on (server = ``[DEFAULT] host``)."),
    cfg.IntOpt(
        "max_disk_devices_to_attach",
        default=-1,
        min=-1,
        help="""
Maximum number of disk devices one instance may have attached.

Possible values:

* -1: unlimited.
* A positive integer: attaches past it are refused (HTTP 403 below 2.101).
"""),
    cfg.IntOpt(
        "volume_wait_timeout",
        default=180,
        min=1,
        help="Seconds a compute waits for a volume it created to become available."),
    cfg.IntOpt(
        "reimage_timeout_per_gb",
        default=20,
        min=1,
        help="""
Seconds per GiB of image a rebuild of a volume-backed server onto a new image
(API 2.93) waits for Cinder's ``volume-reimaged`` event after ``os-reimage``
(at least one GiB is counted). When the time is up, or Cinder puts the volume
in ``error`` meanwhile, the rebuild fails and the server goes to ERROR with a
fault that says why. The same meaning as Nova's option of this name.
"""),
    cfg.IntOpt(
        "max_concurrent_builds",
        default=10,
        min=0,
        help="""
Builds a compute runs at once (like Nova's option of the same name); further
builds wait their turn. Each build creates its volumes in Cinder and waits for
them: a hundred at once made Cinder's scheduler open more MariaDB connections
than the server allows (volumes stuck ``creating``, servers ERROR) and drove
PostgreSQL out of client slots, while builds that wait their turn finish in
order instead of all at the very end. 0 means no limit.
"""),
    cfg.IntOpt(
        "host_probe_timeout",
        default=5,
        min=1,
        help="""
Seconds the conductor waits for a compute that looks down (no recent
heartbeat) to answer a ping before it refuses work for it (an attach is then
refused with 409 below API 2.101, or recorded as failed from 2.101). A
build, an unshelve or a move that finds no compute up asks each one that is
down only by its heartbeat's age (not forced down) the same way, and places
the server on one that answers.

Related options:

* ``[DEFAULT] service_down_time``
"""),
    cfg.IntOpt(
        "dangling_attachment_reconcile_interval",
        default=0,
        min=0,
        help="""
Seconds between two runs of the compute's periodic reconciliation of volume
attachments: for every server of the host that is not in a task, a BDM whose
Cinder attachment or volume is gone (or ``available``) is removed, and a
Cinder attachment that claims the server without a BDM is deleted, as on a
reboot. One paged listing of Cinder's attachments serves all the servers of
a run.

Possible values:

* 0 (default): off. Reboots, ``volumesvc-manage volume_attachment cleanup``
  and the reservation watches still reconcile.
* A positive integer: the interval in seconds.

Related options:

* ``attachment_reservation_timeout``
* ``[cinder] list_page_size``
"""),
    cfg.IntOpt(
        "database_outage_wait",
        default=120,
        min=0,
        help="""
Seconds a compute keeps asking its conductor again (after 1, 2, 4, then
every 8 seconds) when a call that records the outcome of an attach or a
detach failed because the conductor's database was unreachable: the
connection information of a disk now in the guest, the ``attached`` status,
the removal of a detached volume's block device mapping, or the ``error``
kept for a failed attach. Without this a database restarted in the middle
of an attach made the compute undo a finished attach and lose its record of
why. The same wait bounds the calls that record that a server now runs
elsewhere (a live migration's switch and completion, an evacuation's or a
cold move's finish), which are also asked again while no conductor answers
them at all: the guest has moved, and undoing that would stop it. 0 means
the first failure is final.

Related options:

* ``[database] max_retries`` and ``retry_interval`` (oslo.db: the
  conductor's own connection retries)
"""),
    cfg.IntOpt(
        "attachment_reservation_timeout",
        default=600,
        min=1,
        help="""
Seconds after which a volume attachment that is still in the middle of an
attach (a BDM without a Cinder attachment id, a Cinder attachment still
``reserved`` or ``attaching``) counts as abandoned: a conductor, compute or
cinder-api died during the attach. The compute then rolls it back (or
finishes it, when Cinder already has the connector) instead of leaving the
volume ``reserved`` forever. A detach still under way after as long (its
BDM ``detaching``, its Cinder attachment still there) counts as abandoned
likewise and is finished; a compute that starts finishes the detaches it
died in at once. Younger work is never touched by the dangling
attachment reconciliation, with one exception: a Cinder attachment that
claims the server and that no BDM knows, found while the server's instance
lock is held (SOFT and HARD reboot, ``volumesvc-manage volume_attachment
cleanup <server>``, compute start), is deleted at once in any status. The
guard still applies to the periodic task and ``--all-servers``, which list
Cinder before they take each server's lock.

Related options:

* ``[DEFAULT] long_rpc_timeout``: keep this above the time an attach may
  legitimately wait in a compute's queue.
"""),
]


def register_opts(conf):
    # NOTE: a deep copy per ConfigOpts: oslo.config shares a registered
    # OptGroup's options between confs, so overrides would leak across them.
    group = copy.deepcopy(compute_group)
    conf.register_group(group)
    conf.register_opts(compute_opts, group=group)


def list_opts():
    return [(compute_group, compute_opts)]
