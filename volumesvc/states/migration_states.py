"""The statuses of a migration row and what a user may ask of a running one.

A live migration goes ``accepted`` (the API) → ``queued`` (a conductor took
it) → ``preparing`` (the source makes the destination's attachments) →
``running`` (libvirt moves the guest) → ``post-migrating`` (the server is
the destination's) → ``completed``; it ends ``error`` when it failed and the
server stayed where it was, ``cancelled`` when the user aborted it. An
evacuation goes ``accepted`` (the API) → ``pre-migrating`` (a conductor
chose the destination and cast it) → ``running`` (the destination took it)
→ ``done`` (the server is the destination's) → ``completed`` (the old host
came back and let go of what it had); it ends ``error`` when the conductor
refused it and ``failed`` when the destination could not finish. Here, not
in ``objects/``, because the computes (which never import the database
layer) read and write them too.
"""

from volumesvc.states import task_states

LIVE_MIGRATION = "live-migration"
MIGRATION = "migration"
RESIZE = "resize"
EVACUATION = "evacuation"
TYPES = (LIVE_MIGRATION, MIGRATION, RESIZE, EVACUATION)
#: The moves that stop the guest and start it again elsewhere (or resized).
COLD_TYPES = (MIGRATION, RESIZE)

ACCEPTED = "accepted"
QUEUED = "queued"
PREPARING = "preparing"
RUNNING = "running"
POST_MIGRATING = "post-migrating"
COMPLETED = "completed"
ERROR = "error"
FAILED = "failed"
CANCELLED = "cancelled"
PRE_MIGRATING = "pre-migrating"
DONE = "done"

#: A live migration not yet settled: ``servers/{id}/migrations`` lists these.
IN_PROGRESS = (ACCEPTED, QUEUED, PREPARING, RUNNING, POST_MIGRATING)
#: Statuses an abort (2.24) is accepted in, as Nova's (before post-migrating).
ABORTABLE = (ACCEPTED, QUEUED, PREPARING, RUNNING)

#: An evacuation its destination has not settled yet.
EVACUATION_IN_PROGRESS = (ACCEPTED, PRE_MIGRATING, RUNNING)

#: What the user asked of a running move (the row's ``requested``).
ABORT = "abort"
FORCE_COMPLETE = "force-complete"

# A cold migration or resize goes ``pre-migrating`` (the API; the conductor
# picks the destination) → ``migrating`` (the source stops the guest and
# disconnects its volumes) → ``post-migrating`` (the destination connects
# them and starts the guest) → ``finished`` (the server is ``RESIZED`` on the
# destination), then ``confirmed`` or ``reverting`` → ``reverted`` (back on
# the source with its old flavor). ``error`` when it failed and the server
# was put back on the source.
# Nova spells this status as the live migration's task state.
MIGRATING = task_states.MIGRATING
FINISHED = "finished"
CONFIRMED = "confirmed"
REVERTING = "reverting"
REVERTED = "reverted"

#: A cold move not settled: its server holds room on both hosts (as Nova's
#: allocations do until the confirm or the revert).
COLD_UNSETTLED = (PRE_MIGRATING, MIGRATING, POST_MIGRATING, FINISHED, REVERTING)
