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

The same task ends the createImage requests whose API process died
(``create_image_grace``).

Related options:

* ``[cinder] snapshot_undo_timeout``
* ``create_image_grace``
"""),
    cfg.IntOpt(
        "create_image_grace",
        default=600,
        min=1,
        help="""
Seconds a createImage may stay in progress (its ``api_snapshot_instance``
event unfinished) before the conductors take the API process that ran it for
dead: the API snapshots the server's volumes in Cinder, then registers the
image in Glance, and a process killed in between would leave the snapshots
for ever. Past this age the abandoned snapshot cleanup
(``abandoned_snapshot_cleanup_interval``) finishes the request: when its
image is ``active`` in Glance the event is ended ``Success`` (only the answer
was lost); otherwise it is ended ``Error``, the image record is deleted if
there is one and the request's snapshots are deleted once Cinder allows it.
An API request still running then finds its event ended and undoes its own
work, so keep this above the longest createImage: the Cinder and Glance
calls plus ``[cinder] snapshot_undo_timeout``.

Related options:

* ``abandoned_snapshot_cleanup_interval``
* ``[cinder] snapshot_undo_timeout``
"""),
    cfg.IntOpt(
        "volume_request_recovery_interval",
        default=15,
        min=0,
        help="""
Seconds between two runs of the conductor task that re-runs accepted volume
attach and detach requests (API 2.101 and later) that no live conductor is
running: the cast never arrived, or the conductor that took it died. Every
conductor runs the task; a request is re-run by one of them only (the rows
are claimed with a compare and swap). A conductor also recovers, as it
starts, the requests its own host's previous process left in flight. 0
turns the periodic task off; requests whose conductor died then wait for
that conductor's host to start one again.

Related options:

* ``volume_request_grace``
* ``volume_request_max_attempts``
* ``[DEFAULT] service_down_time``
"""),
    cfg.IntOpt(
        "volume_request_grace",
        default=60,
        min=1,
        help="""
Seconds an accepted attach or detach may stay unclaimed (its cast still on
the message bus) before a conductor re-runs it as lost. A cast that arrives
later finds the request taken and does nothing, so the work never runs
twice; a value shorter than the bus's worst queueing delay only moves work
from the queue to the recovery task.

Related options:

* ``volume_request_recovery_interval``
"""),
    cfg.IntOpt(
        "move_request_grace",
        default=60,
        min=1,
        help="""
Seconds a live migration, cold migration, resize or evacuation that no
compute has taken yet may stay unchanged before a conductor drives it again
from its record (checks, destination, cast): the conductor that took the
API's request died before its cast reached a compute, or the cast was lost.
A second cast is harmless: the compute takes a move with a compare and swap
on its status, so only one runs. Checked every
``volume_request_recovery_interval`` seconds (0 turns it off); a move still
not taken after ``live_migration_start_timeout`` is ended.

Related options:

* ``volume_request_recovery_interval``
* ``live_migration_start_timeout``
"""),
    cfg.IntOpt(
        "live_migration_start_timeout",
        default=300,
        min=1,
        help="""
Seconds a live migration may stay ``accepted`` or ``queued``, and a resize
or cold migration ``pre-migrating`` (no source compute took it yet), before
the conductors end it ``error`` and give the server back its state with no
task: the conductor that took the
request died before it reached the source, or the cast was lost. Checked
every ``volume_request_recovery_interval`` seconds. Keep it above the time
a busy source compute may take to get to a queued move. An evacuation no
destination took (still ``accepted`` or ``pre-migrating``) is ended ``error``
after the same time, its server back in the state it had with no task. Counted
from the request: a move driven again (``move_request_grace``) is not given
more time.
"""),
    cfg.IntOpt(
        "volume_request_max_attempts",
        default=3,
        min=1,
        help="""
How many times one accepted attach or detach is started (the first run
included) before the conductors give up on it. A request that was started
this many times without settling (its conductor died each time) is failed:
an attach is recorded as a failed attach with an error instance action
event, a detach gives the volume back its ``in-use`` status and the
attachment its ``attached`` status with a fault.

Related options:

* ``volume_request_recovery_interval``
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
