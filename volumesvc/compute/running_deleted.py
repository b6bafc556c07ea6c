"""Domains still running on this host for servers the database says are deleted.

How they come about: the conductor deletes a server *locally* when its
compute looks down (no heartbeat for ``[DEFAULT] service_down_time``,
``conductor/tasks/delete.py``). It destroys the record and releases the
Cinder attachments, but it cannot reach the domain. When the compute was
only slow (heartbeats starved on a loaded host) or cut off for a while, the
QEMU domain keeps running and keeps its volumes open: Cinder then cannot
delete a delete-on-termination volume (an RBD image stays busy), and the
guest goes on using memory, CPU and the volumes of a server nobody owns.

A periodic task of the compute (``[DEFAULT]
running_deleted_instance_poll_interval``) finds these domains and applies
``[DEFAULT] running_deleted_instance_action`` (Nova's options and meanings)
to each, under the server's instance lock.

Which domains count, and why the others are never touched:

* the server's record is deleted (read with ``read_deleted="yes"``), for
  at least ``running_deleted_instance_timeout`` seconds: a deleted record
  is final, nothing can bring the server back;
* a live record on this host is the server's own domain, in whatever state
  (a build, a reboot): never touched;
* a live record on another host (or none) is logged, never acted on: a
  domain here for a server that lives elsewhere means either a libvirt
  daemon shared by the computes of one machine (the all-in-one on RBD, where
  each compute sees the others' domains) or two guests using the same
  volumes, which an operator has to sort out, not a guess;
* a domain the database does not know at all is left alone and only
  logged: deleted rows are kept, so it was never a server of this
  deployment (two deployments may share one libvirt daemon, see
  ``[DEFAULT] instance_name_template``).

The choice is re-checked under the instance lock just before acting: a
delete or an interrupted build that already destroyed the domain meanwhile
leaves nothing to do.

Not run at compute start: ``init_host`` runs before the compute's first
heartbeat, and destroying many domains (each waits for QEMU to exit) and
asking Cinder about their volumes would keep the compute looking down for
longer, the very condition that leads to local deletes. The first check
comes one poll interval after the start, as with Nova.
"""

import enum

from oslo_log import log as logging
from oslo_utils import timeutils

from volumesvc import context as vs_context
from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import instances as compute_instances
from volumesvc.compute import reporter as compute_reporter
from volumesvc.compute import teardown
from volumesvc.compute import volumes as boot_volumes
from volumesvc.states import power_state

LOG = logging.getLogger(__name__)

NOOP, LOG_ONLY, SHUTDOWN, REAP = "noop", "log", "shutdown", "reap"
# Uuids named in a log line about domains left alone (the count is always given).
_LISTED = 10


class Verdict(enum.Enum):
    """What the database says about the server of one domain of this host."""

    LIVE_HERE = "the server lives on this host"
    UNKNOWN = "no server of this deployment has this uuid"
    ELSEWHERE = "the server lives on another host"
    TOO_RECENT = "the server was deleted less than running_deleted_instance_timeout ago"
    RUNNING_DELETED = "the server is deleted"


def _parse_time(value):
    """Naive UTC from what crossed the bus (an ISO string or a datetime), or None."""
    if isinstance(value, str):
        value = timeutils.parse_isotime(value)
    return timeutils.normalize_time(value) if value else None


def judge(record, *, host, now, timeout) -> Verdict:
    """The verdict on a domain whose server record is ``record`` (None: no record).

    ``now`` is naive UTC; ``timeout`` the seconds a record must have been
    deleted. A deleted record without ``deleted_at`` (none is written that
    way) is old enough only when there is no timeout.
    """
    if record is None:
        return Verdict.UNKNOWN
    if not record.get("deleted"):
        return Verdict.LIVE_HERE if record.get("host") == host else Verdict.ELSEWHERE
    deleted_at = _parse_time(record.get("deleted_at"))
    if deleted_at is None:
        return Verdict.RUNNING_DELETED if timeout <= 0 else Verdict.TOO_RECENT
    if (now - deleted_at).total_seconds() < timeout:
        return Verdict.TOO_RECENT
    return Verdict.RUNNING_DELETED


def deleted_with(bdm, record) -> bool:
    """Whether ``bdm`` was soft deleted together with the server ``record``.

    Deleting a server stamps its BDMs with the server's own ``deleted_at``;
    a BDM detached earlier has an older stamp, and its volume may since have
    been attached to another server, maybe on this host.
    """
    stamp = _parse_time(record.get("deleted_at"))
    return bdm.deleted and stamp is not None and _parse_time(bdm.deleted_at) == stamp


def _reading_deleted(context):
    """A copy of ``context`` whose database reads include deleted rows."""
    values = dict(context.to_dict(), read_deleted="yes")
    return vs_context.RequestContext.from_dict(values)


class RunningDeletedReaper:
    """Finds and handles this host's domains of deleted servers (one per compute)."""

    def __init__(self, conf, *, host, driver, conductor, cinder, attacher, lock):
        self.conf = conf
        #: the compute's VolumeAttacher: a reaped domain's volumes go as a delete's do
        self.attacher = attacher
        self.host = host
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self._lock = lock

    # -- finding --------------------------------------------------------------

    def _record(self, context, uuid):
        try:
            return self.conductor.instance_get(_reading_deleted(context), instance_uuid=uuid)
        except exception.InstanceNotFound:
            return None

    def _judge(self, context, uuid):
        record = self._record(context, uuid)
        return record, judge(record, host=self.host, now=timeutils.utcnow(),
                             timeout=self.conf.running_deleted_instance_timeout)

    def find(self, context) -> list[dict]:
        """The deleted records of this host's domains that are to be acted on.

        One conductor call lists the host's live servers; only the other
        domains are looked up one by one (usually none).
        """
        domains = self.driver.list_instance_uuids()
        if not domains:
            return []
        live = {i["uuid"] for i in self.conductor.instance_list_by_host(context,
                                                                        host=self.host)}
        found: list[dict] = []
        left: dict[Verdict, list[str]] = {}
        for uuid in domains:
            if uuid in live:
                continue
            record, verdict = self._judge(context, uuid)
            if verdict is Verdict.RUNNING_DELETED:
                found.append(record)
            else:
                left.setdefault(verdict, []).append(uuid)
        # NOTE: one line per kind and run, at INFO: the computes of one
        # machine may share a libvirt daemon (the all-in-one on RBD), and
        # then each sees every other compute's domains on every run.
        for verdict, uuids in left.items():
            LOG.info("Left alone on %s: %d domains (%s): %s%s", self.host, len(uuids),
                     verdict.value, ", ".join(sorted(uuids)[:_LISTED]),
                     ", ..." if len(uuids) > _LISTED else "")
        return found

    # -- acting ---------------------------------------------------------------

    def run(self, context) -> list[str]:
        """Apply the configured action to each domain found; the uuids acted on.

        Each domain is handled under its server's instance lock, after the
        verdict is checked again; a failure is logged and the next domain
        is handled.
        """
        action = self.conf.running_deleted_instance_action
        if action == NOOP:
            return []
        done = []
        for record in self.find(context):
            uuid = record["uuid"]
            try:
                with self._lock(uuid):
                    record = self._still_running_deleted(context, uuid)
                    if record is None:
                        continue
                    self._act(context, action, record)
                    done.append(uuid)
            except Exception as exc:  # noqa: BLE001 - the next domain still gets its turn
                LOG.warning("Could not %s the domain of deleted server %s: %s", action, uuid,
                            compute_reporter.message_of(exc))
        return done

    def _still_running_deleted(self, context, uuid):
        """The record when the domain still exists and the server is still deleted."""
        if uuid not in self.driver.list_instance_uuids():
            return None
        record, verdict = self._judge(context, uuid)
        return record if verdict is Verdict.RUNNING_DELETED else None

    def _act(self, context, action, record):
        uuid = record["uuid"]
        if action == LOG_ONLY:
            LOG.warning("Domain of server %s (deleted at %s) is still running on %s; left "
                        "running ([DEFAULT] running_deleted_instance_action = log)", uuid,
                        record.get("deleted_at"), self.host)
        elif action == SHUTDOWN:
            self._shutdown(record)
        elif action == REAP:
            self._reap(context, record)

    def _shutdown(self, record):
        """Power the domain off; its definition stays (a second run finds it off)."""
        instance = compute_instances.driver_instance(record)
        if self.driver.get_info(instance) == power_state.SHUTDOWN:
            return
        LOG.warning("Powering off the domain of server %s, deleted at %s, on %s",
                    record["uuid"], record.get("deleted_at"), self.host)
        self.driver.power_off(instance)

    def _reap(self, context, record):
        """Destroy and undefine the domain, then release what it held on this host.

        What goes, in order, as in the compute's delete
        (``compute/teardown.py``):

        * the domain: stopped (QEMU exits and lets go of every volume it had
          open, RBD images included) and undefined;
        * the host side of each volume connection, from the BDMs deleted with
          the server (their saved ``connection_info``; the domain's XML does
          not say enough to disconnect), unless Cinder shows another server
          of this host attached to the volume (a multiattach volume, or one
          attached elsewhere here since it was released);
        * each delete-on-termination volume that is ``available`` with no
          attachment (the local delete could not delete it while the domain
          held it open);
        * the instance directory (an image-backed root disk).

        What does not: a volume that is attached again, or that Cinder
        refuses to delete (snapshots) stays and is logged; a connection of
        a volume whose BDM has no ``connection_info`` stays (there is none
        to disconnect with; RBD and local volumes have no host side).
        Cinder attachments are not touched: the local delete released them.
        """
        uuid = record["uuid"]
        bdms = [b for b in bdm_mod.listed(self.conductor, _reading_deleted(context), uuid)
                if deleted_with(b, record)]
        volume_bdms = boot_volumes.volume_bdms(bdms)
        LOG.warning("Reaping the domain of server %s, deleted at %s, still running on %s "
                    "(%d volumes)", uuid, record.get("deleted_at"), self.host,
                    len(volume_bdms))
        teardown.destroy_on_host(context, driver=self.driver, attacher=self.attacher,
                                 instance=record, bdms=bdms, released=True)
        for bdm in volume_bdms:
            if bdm.delete_on_termination:
                self._delete_volume(context, uuid, bdm.volume_id)
        boot_volumes.remove_instance_dir(self.conf, uuid)

    def _delete_volume(self, context, uuid, volume_id):
        if not volume_id:
            return
        try:
            volume = self.cinder.get(context, volume_id)
            if volume.get("status") != "available" or volume.get("attachments"):
                LOG.info("Volume %s of deleted server %s is %s; not deleted", volume_id,
                         uuid, volume.get("status"))
                return
            self.cinder.delete(context, volume_id)
        except exception.VolumeNotFound:
            return
        except Exception as exc:  # noqa: BLE001 - the volume stays, as on a delete
            LOG.warning("Volume %s of deleted server %s was not deleted: %s", volume_id, uuid,
                        compute_reporter.message_of(exc))
            return
        LOG.info("Deleted volume %s of deleted server %s (delete_on_termination)",
                 volume_id, uuid)
