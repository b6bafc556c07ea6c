"""Reconcile a server's volume BDMs with Cinder's attachments, in both directions.

Why: a BDM and a Cinder attachment must exist together or not at all. They
drift apart when someone edits Cinder behind our back (an attachment deleted
or created directly, a volume reset to ``available``), and when a process
dies in the middle of an attach (doc/source/contributor/contract.rst §10; issue 10). Left alone the
volume stays ``reserved`` or ``attaching`` forever, cannot be detached and
cannot be attached again.

What counts as dangling, for one server (always under its instance lock):

* a BDM whose Cinder attachment no longer exists, or whose volume is gone or
  ``available``: the BDM is removed (and its disk leaves the running domain);
* a Cinder attachment that claims the server but no BDM knows: deleted;
* an attach that made no progress for ``[compute]
  attachment_reservation_timeout`` seconds: a BDM still without an
  attachment id (left by an older conductor that died), a Cinder attachment
  still ``reserved`` (the attach cast was lost and the conductor's re-casts
  did not get through) or ``attaching`` or ``attached`` without a
  connection in the BDM (the compute died after giving Cinder its
  connector, before its report). Those two are finished when the disk can
  still be attached, everything else is rolled back;
* a root volume (boot index 0) whose attachment is still ``reserved``
  without a connection, or ``attaching``: a rebuild released it for
  Cinder's reimage and failed, timed out or died before it had connected it
  again and completed it. It is never rolled back (the server would lose
  its disk, and there is no domain to finish an attach into): it is
  connected here and completed, so the volume is ``in-use`` and the server
  can be rebuilt, rebooted or deleted. While Cinder still reimages it
  (``downloading``) it is left for later; a volume Cinder put in an error
  status is left as it is. An attachment of it no BDM knows (the connected
  one a rebuild that died had not deleted yet) goes first: Cinder refuses to
  connect the root's while another holds the same connector;
* a detach that made no progress (a BDM still ``detaching`` with its
  Cinder attachment, found when the compute starts or after the same
  timeout): the detach cast went with a compute that died in it, and
  nothing else would ever run it again (the volume stayed ``detaching``
  and every further detach was refused). It is finished as the user asked,
  by the detach's own steps; if they fail, the volume is ``in-use`` again
  and the BDM ``attached`` with the reason, as after any failed detach.

Work younger than the timeout is never touched: that is an attach in
progress. Only the per-instance lock makes the BDM list and the Cinder
listing comparable: a reservation (which creates the BDM before any Cinder
attachment exists) needs the same lock. So a Cinder attachment that no BDM
knows, listed *under* the lock (reboot, cleanup of one server, compute
start, watches), is deleted at once whatever its status: nothing of ours
can be in flight without a BDM. Only a listing taken before the lock (the
periodic task, ``--all-servers``) keeps the age guard for attachments in
progress: the attach may have started between the listing and the lock.

The Cinder side comes from a *view* (``volume/reconciliation.py``): ``InstanceView`` lists one
server's attachments (reboot, operator cleanup of one server);
``SnapshotView`` serves many servers from one paged listing of every
attachment (periodic task, ``--all-servers``), and every removal it
suggests is confirmed with a GET first, so a listing taken a little
earlier can never remove something that exists now.
"""

import dataclasses
from typing import Any

from oslo_log import log as logging
from oslo_utils import timeutils

from volumesvc import exception
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import connections, rebuild
from volumesvc.states import attach_states
from volumesvc.volume import reconciliation

LOG = logging.getLogger(__name__)

# Cinder attachment statuses of work in flight.
IN_PROGRESS = frozenset({"reserved", "attaching", "detaching"})
# Cinder attachment statuses that hold this compute's connector: an attach
# interrupted there can still be finished.
CONNECTED = frozenset({"attaching", "attached"})
ACTION = "cleanup_volume_attachments"
EVENT = "compute_reconcile_volume_attachments"


# -- deciding (pure) ---------------------------------------------------------------------


def _parse_time(value):
    if not value:
        return None
    if isinstance(value, str):
        value = timeutils.parse_isotime(value)
    return timeutils.normalize_time(value)


def _changed_at(updated_at, created_at):
    return _parse_time(updated_at) or _parse_time(created_at)


def last_progress(record):
    """When a volume (Cinder's dict) last changed (naive UTC), or None when unknown."""
    return _changed_at(record.get("updated_at"), record.get("created_at"))


def _older(changed, now, timeout) -> bool:
    return changed is not None and (now - changed).total_seconds() > timeout


def is_stale(record, now, timeout) -> bool:
    """No progress for longer than ``timeout`` seconds (unknown age: not stale)."""
    return _older(last_progress(record), now, timeout)


def bdm_is_stale(bdm, now, timeout) -> bool:
    """:func:`is_stale` for a BDM (the compute's view, ``compute/bdm.py``)."""
    return _older(_changed_at(bdm.updated_at, bdm.created_at), now, timeout)


@dataclasses.dataclass
class Plan:
    """The server's volume BDMs and Cinder attachments, sorted by what to do."""

    stale_reservations: list = dataclasses.field(default_factory=list)   # bdms
    unlisted: list = dataclasses.field(default_factory=list)             # bdms
    attached: list = dataclasses.field(default_factory=list)             # (bdm, att)
    interrupted: list = dataclasses.field(default_factory=list)          # (bdm, att)
    interrupted_detaches: list = dataclasses.field(default_factory=list)  # (bdm, att)
    released_roots: list = dataclasses.field(default_factory=list)       # (bdm, att)
    orphans: list = dataclasses.field(default_factory=list)              # atts
    orphans_in_progress: list = dataclasses.field(default_factory=list)  # atts
    busy: list = dataclasses.field(default_factory=list)                 # dicts


def _busy(volume_id, attachment_id, reason):
    return {"volume_id": volume_id, "attachment_id": attachment_id, "reason": reason}


def plan(bdms, attachments, *, now, timeout, recovering=False) -> Plan:
    """Sort ``bdms`` (the server's, as views) and ``attachments`` (Cinder's for it).

    ``recovering``: the compute just started, so an ``attaching`` attachment
    of its own cannot be in progress any more (only this compute's attach
    gives Cinder a connector, and that attach died with the process), nor
    can a BDM's detach (only this compute detaches a server it hosts).
    """
    result = Plan()
    listed = {a["id"]: a for a in attachments}
    claimed = set()
    reserving = set()  # volumes with a young BDM still waiting for its attachment id
    for bdm in bdms:
        if not bdm.is_volume or not bdm.volume_id:
            continue
        volume_id, attachment_id = bdm.volume_id, bdm.attachment_id
        if not attachment_id:
            if bdm_is_stale(bdm, now, timeout):
                result.stale_reservations.append(bdm)
            else:
                reserving.add(volume_id)
                result.busy.append(_busy(volume_id, None, "device reserved, no Cinder "
                                                          "attachment yet"))
            continue
        claimed.add(attachment_id)
        attachment = listed.get(attachment_id)
        if attachment is None:
            result.unlisted.append(bdm)
            continue
        status = attachment.get("status")
        # NOTE: "attached" without a connection: the compute died between
        # Cinder's attachment_complete and its one report to the conductor.
        pending = status == "attaching" or (status in ("reserved", "attached")
                                            and not bdm.has_connection)
        if not pending:
            if bdm.attach_status == attach_states.DETACHING and (
                    recovering or bdm_is_stale(bdm, now, timeout)):
                result.interrupted_detaches.append((bdm, attachment))
            else:
                result.attached.append((bdm, attachment))
        elif bdm.boot_index == 0:
            result.released_roots.append((bdm, attachment))
        elif (recovering and status in CONNECTED) or bdm_is_stale(bdm, now, timeout):
            result.interrupted.append((bdm, attachment))
        else:
            result.busy.append(_busy(volume_id, attachment_id, f"attach in progress "
                                                               f"(Cinder: {status})"))
    for attachment in attachments:
        if attachment["id"] in claimed:
            continue
        if attachment.get("volume_id") in reserving:
            result.busy.append(_busy(attachment["volume_id"], attachment["id"],
                                     "attachment of a reservation in progress"))
        elif attachment.get("status") in IN_PROGRESS:
            result.orphans_in_progress.append(attachment)
        else:
            result.orphans.append(attachment)
    return result


# -- doing ---------------------------------------------------------------------------------


class Reconciler:
    """Runs the reconciliation of one server; the caller holds its instance lock.

    It holds only the compute's clients; :meth:`run` reads and plans, then
    hands one :class:`Pass` to the steps (:func:`apply` and the functions
    it calls), which record what they do in the pass's report.
    """

    def __init__(self, conf, *, driver, conductor, cinder, attacher, keys=None):
        self.conf = conf
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.attacher = attacher
        self.keys = keys if keys is not None else attacher.keys

    @property
    def timeout(self):
        return self.conf.compute.attachment_reservation_timeout

    def instance_view(self, context):
        return reconciliation.InstanceView(self.cinder, context, self.conf.cinder.list_page_size)

    def run(self, context, instance, driver_instance, *, view, bdms=None, dry_run=False,
            recovering=False):
        """Reconcile ``instance``; return (Report, the BDMs that remain).

        ``bdms``: the caller's listing (views), read here when None. A root
        volume connected again takes its place in it as saved: a reboot
        defines its domain from that list.

        Cinder unreachable: nothing is changed and ``skipped`` says so. Any
        other error is recorded per item in ``errors`` and the rest goes on.
        """
        uuid = instance["uuid"]
        report = reconciliation.Report(instance_uuid=uuid, dry_run=dry_run)
        if bdms is None:
            bdms = bdm_mod.listed(self.conductor, context, uuid)
        try:
            attachments = view.attachments(uuid)
        except (exception.CinderConnectionFailed, exception.CinderAPIError,
                exception.Forbidden) as exc:
            LOG.warning("Cinder could not list the attachments of %s; dangling volume "
                        "attachments were not reconciled: %s", uuid, exc)
            report.reason = reconciliation.reason_of(exc)
            report.skipped = f"Cinder unreachable: {exc}"
            return report, bdms
        work = plan(bdms, attachments, now=timeutils.utcnow(), timeout=self.timeout,
                    recovering=recovering)
        report.busy.extend(work.busy)
        steps = Pass(context=context, admin=context.elevated(), uuid=uuid,
                     driver_instance=driver_instance, report=report, dry_run=dry_run,
                     timeout=self.timeout, host=self.conf.host, driver=self.driver,
                     conductor=self.conductor, cinder=self.cinder, attacher=self.attacher,
                     keys=self.keys, bdms=bdms)
        try:
            apply(steps, work, view)
        except exception.CinderConnectionFailed as exc:
            LOG.warning("Cinder became unreachable while reconciling %s: %s", uuid, exc)
            report.reason = reconciliation.Reason.CINDER_UNAVAILABLE
            report.errors.append(f"Cinder unreachable: {exc}")
        remaining = report.remaining(bdms)
        if report.changed and not dry_run:
            LOG.info("Reconciled volume attachments of %s:\n%s", uuid, report.summary())
        return report, remaining


@dataclasses.dataclass(frozen=True)
class Pass:
    """What every step of one pass over one server needs, passed to each explicitly.

    Why a frozen record and plain functions: each step reads the same few
    things (who to ask, which server, whether to change anything) and
    writes only to ``report``, the pass's one output (and a BDM it saves
    anew into ``bdms``); nothing else carries state from one step to the
    next, so a step can be read (and tested) on its own.
    """

    context: Any
    admin: Any            # ``context.elevated()``: Cinder reads and deletes
    uuid: str
    driver_instance: Any
    report: reconciliation.Report
    dry_run: bool
    timeout: int          # [compute] attachment_reservation_timeout
    host: str
    driver: Any
    conductor: Any
    cinder: Any
    attacher: Any
    keys: Any
    # The server's BDMs being reconciled, the caller's list: a root connected
    # again takes its place here as saved (a reboot defines its domain from it).
    bdms: list = dataclasses.field(default_factory=list)


def apply(p: Pass, work: Plan, view) -> None:
    """Take every step ``work`` asks for, recording each in ``p.report``.

    Cinder unreachable ends the pass (raised); any other failure of one
    item is recorded in ``errors`` and the others go on.
    """
    orphans = list(work.orphans)
    stale_volumes = {bdm.volume_id for bdm in work.stale_reservations}
    for bdm in work.stale_reservations:
        _safely(p, _remove_bdm, bdm, f"reservation without a Cinder attachment "
                                     f"for more than {p.timeout}s", True)
    for bdm in work.unlisted:
        _safely(p, _check_unlisted, bdm)
    for bdm, attachment in work.attached:
        if view.suspect_volume(bdm.volume_id) and _safely(p, _volume_gone, bdm):
            orphans.append(attachment)
    for bdm, attachment in work.interrupted:
        _safely(p, _interrupted, bdm, attachment)
    for bdm, attachment in work.interrupted_detaches:
        _safely(p, _interrupted_detach, bdm, attachment)
    for attachment in work.orphans_in_progress:
        if view.listed_under_lock or attachment.get("volume_id") in stale_volumes or \
                _safely(p, _stale_volume, attachment):
            orphans.append(attachment)
        else:
            p.report.busy.append(_busy(attachment.get("volume_id"), attachment["id"],
                                       f"Cinder attachment {attachment.get('status')}"
                                       " without a BDM, younger than the timeout"))
    for attachment in orphans:
        _safely(p, _delete_attachment, attachment, "claims the server but no BDM knows it")
    # NOTE: after the orphans: a rebuild that died releasing its root left the
    # old attachment with this host's connector, and Cinder refuses to connect
    # the new one while it exists ("duplicate connectors").
    for bdm, attachment in work.released_roots:
        _safely(p, _reconnect_root, bdm, attachment)


def _safely(p: Pass, step, *args):
    """Run one step; a Cinder or conductor error is reported and the pass goes on.

    Cinder unreachable ends the pass (every further step would fail too).
    The step's name (without underscores) prefixes its entry in ``errors``.
    """
    try:
        return step(p, *args)
    except exception.CinderConnectionFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - one item must not stop the others
        name = step.__name__.strip("_")
        reason = reconciliation.reason_of(exc)
        if reason is reconciliation.Reason.BUG:
            LOG.exception("Reconciling volume attachments of %s: %s failed", p.uuid, name)
        else:
            LOG.warning("Reconciling volume attachments of %s: %s failed: %s", p.uuid,
                        name, exc)
        p.report.errors.append(f"{name}: {exc}")
        # NOTE: a step that failed for a reason that goes away (no conductor
        # answered: one killed mid-call) makes the pass worth another try;
        # the caller hands the server to a watch (report.retry).
        if reason in reconciliation.RETRIED and p.report.reason is None:
            p.report.reason = reason
        return None


# -- BDM side -------------------------------------------------------------------------


def _check_unlisted(p: Pass, bdm):
    try:
        p.cinder.attachment_get(p.admin, bdm.attachment_id)
    except exception.VolumeAttachmentNotFound:
        _remove_bdm(p, bdm, "its Cinder attachment no longer exists")
    # Found: the listing was older than the attachment; nothing dangles.


def _volume_gone(p: Pass, bdm) -> bool:
    """Remove the BDM when Cinder says its volume is gone or ``available``."""
    try:
        volume = p.cinder.get(p.admin, bdm.volume_id)
    except exception.VolumeNotFound:
        _remove_bdm(p, bdm, "its volume no longer exists")
        return True
    if volume.get("status") == "available":
        _remove_bdm(p, bdm, "its volume is available in Cinder")
        return True
    return False


def _remove_bdm(p: Pass, bdm, reason, failed_attach=False):
    entry = {"volume_id": bdm.volume_id, "attachment_id": bdm.attachment_id,
             "bdm_uuid": bdm.uuid, "device": bdm.device_name,
             "reason": reason}
    p.report.removed_bdms.append(entry)
    if p.dry_run:
        return
    LOG.info("Removing dangling volume attachment of server %s: volume %s, attachment "
             "%s (%s)", p.uuid, bdm.volume_id, bdm.attachment_id, reason)
    _detach_disk(p, bdm)
    _forget(p, bdm, reason if failed_attach else None)


def _forget(p: Pass, bdm, failed_attach=None):
    """Delete the BDM; for an attach that never finished, keep it as its ``error``.

    ``failed_attach``: why the attach was given up. An accepted (2.101)
    attach rolled back here would otherwise leave no trace a client can
    see (regression: a compute SIGKILLed mid-storm, its attaches' casts
    lost with it, rolled back after the timeout with nothing at 2.106).
    """
    values = None
    if failed_attach:
        values = attach_states.fault_values(
            attach_states.ERROR, 500, f"The attach was abandoned and rolled back: "
                                      f"{failed_attach}. Attach the volume again.")
    try:
        p.conductor.bdm_destroy(p.context, bdm_uuid=bdm.uuid, values=values)
    except exception.NotFound:
        pass


def _detach_disk(p: Pass, bdm):
    """The running domain loses the disk too (a SOFT reboot keeps live devices).

    Then the host side goes as a detach's would: the connection and an
    encrypted volume's libvirt secret or dm-crypt mapping. Without it the
    secret of a volume whose attachment an operator deleted in Cinder
    stayed on the host until a later periodic pass noticed it. A disk the
    domain may still hold keeps its connection (the guest may use it).
    """
    info = bdm.connection_info
    if not info:
        return
    try:
        p.driver.detach_volume(info, p.driver_instance, bdm.device_name)
    except exception.InstanceNotFound:
        pass
    except Exception as exc:  # noqa: BLE001 - the record goes anyway; a HARD reboot drops it
        LOG.warning("Could not detach the disk of volume %s from %s: %s",
                    bdm.volume_id, p.uuid, exc)
        p.report.errors.append(f"detach of {bdm.volume_id} from the domain: {exc}")
        return
    try:
        connections.disconnect(p.context, cinder=p.cinder, conductor=p.conductor,
                               driver=p.driver, host=p.host, instance_uuid=p.uuid,
                               connection_info=info)
    except Exception as exc:  # noqa: BLE001 - the periodic pass drops a secret left behind
        LOG.warning("Could not disconnect volume %s from this host: %s",
                    bdm.volume_id, exc)
        p.report.errors.append(f"disconnect of {bdm.volume_id}: {exc}")


# -- interrupted attaches ---------------------------------------------------------------


def _interrupted(p: Pass, bdm, attachment):
    volume_id, attachment_id = bdm.volume_id, attachment["id"]
    entry = {"volume_id": volume_id, "attachment_id": attachment_id,
             "bdm_uuid": bdm.uuid, "device": bdm.device_name}
    if attachment.get("status") in CONNECTED:
        # Cinder has our connector: the attach can still be finished.
        if p.dry_run:
            p.report.finished.append(entry)
            return
        try:
            p.attacher.resume(p.context, p.driver_instance, bdm)
        except Exception as exc:  # noqa: BLE001 - resume undid everything itself
            LOG.warning("Interrupted attach of volume %s to %s could not be finished "
                        "and was rolled back: %s", volume_id, p.uuid, exc)
            p.report.rolled_back.append(dict(
                entry, reason=f"interrupted attach could not be finished: {exc}"))
            return
        LOG.info("Finished the interrupted attach of volume %s to %s (attachment %s)",
                 volume_id, p.uuid, attachment_id)
        p.report.finished.append(entry)
        return
    reason = (f"attach made no progress for more than {p.timeout}s "
              f"(Cinder attachment {attachment.get('status')})")
    if not p.dry_run:
        LOG.info("Rolling back the abandoned attach of volume %s to %s (attachment %s)",
                 volume_id, p.uuid, attachment_id)
        _detach_disk(p, bdm)
        p.cinder.attachment_delete(p.admin, attachment_id)
        _forget(p, bdm, reason)
    p.report.rolled_back.append(dict(entry, reason=reason))


# -- interrupted detaches ---------------------------------------------------------------


def _interrupted_detach(p: Pass, bdm, attachment):
    """Finish a detach whose compute died in it (see the module docstring).

    The BDM is read again first: a listing taken before the lock may be
    older than a detach that finished since. Cinder unreachable keeps the
    BDM ``detaching`` for a later pass (the error ends this one).
    """
    volume_id, attachment_id = bdm.volume_id, attachment["id"]
    entry = {"volume_id": volume_id, "attachment_id": attachment_id,
             "bdm_uuid": bdm.uuid, "device": bdm.device_name, "work": "detach"}
    if p.dry_run:
        p.report.finished.append(entry)
        return
    current = next((b for b in bdm_mod.listed(p.conductor, p.context, p.uuid)
                    if b.uuid == bdm.uuid), None)
    if current is None or current.attach_status != attach_states.DETACHING:
        return
    LOG.info("Finishing the interrupted detach of volume %s from %s (attachment %s)",
             volume_id, p.uuid, attachment_id)
    try:
        p.attacher.detach(p.context, p.driver_instance, current, attachment_id)
    except exception.CinderConnectionFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - detach() gave Cinder its volume back
        LOG.warning("Interrupted detach of volume %s from %s could not be finished: %s",
                    volume_id, p.uuid, exc)
        p.attacher.detach_failed(p.context, current, exc)
        p.report.rolled_back.append(dict(
            entry, reason=f"interrupted detach could not be finished: {exc}"))
        return
    p.report.finished.append(entry)


# -- a root volume a rebuild released ---------------------------------------------------


def _reconnect_root(p: Pass, bdm, attachment):
    volume_id = bdm.volume_id
    entry = {"volume_id": volume_id, "attachment_id": attachment["id"],
             "bdm_uuid": bdm.uuid, "device": bdm.device_name}
    status = p.cinder.get(p.admin, volume_id).get("status") or ""
    if status == "downloading":
        p.report.busy.append(_busy(volume_id, attachment["id"],
                                   "root volume released by a rebuild, still being "
                                   "reimaged by Cinder"))
        return
    if "error" in status:
        LOG.warning("Root volume %s of %s is %s in Cinder; its attachment %s is left "
                    "as it is", volume_id, p.uuid, status, attachment["id"])
        return
    if p.dry_run:
        p.report.finished.append(entry)
        return
    rebuild.connect_root(p.context, bdm, driver=p.driver, cinder=p.cinder,
                         conductor=p.conductor, keys=p.keys, bdms=p.bdms)
    p.cinder.attachment_complete(p.context, attachment["id"])
    LOG.info("Connected root volume %s of %s again after an unfinished rebuild "
             "(attachment %s)", volume_id, p.uuid, attachment["id"])
    p.report.finished.append(entry)


# -- Cinder side ------------------------------------------------------------------------


def _stale_volume(p: Pass, attachment) -> bool:
    """An in-progress attachment without a BDM counts once its volume stopped changing."""
    try:
        volume = p.cinder.get(p.admin, attachment["volume_id"])
    except exception.VolumeNotFound:
        return True
    return is_stale(volume, timeutils.utcnow(), p.timeout)


def _delete_attachment(p: Pass, attachment, reason):
    entry = {"attachment_id": attachment["id"], "volume_id": attachment.get("volume_id"),
             "status": attachment.get("status"), "reason": reason}
    if any(d["attachment_id"] == attachment["id"] for d in p.report.deleted_attachments):
        return
    p.report.deleted_attachments.append(entry)
    if p.dry_run:
        return
    LOG.info("Deleting Cinder attachment %s (status %s) of volume %s that claims server "
             "%s: %s", attachment["id"], attachment.get("status"),
             attachment.get("volume_id"), p.uuid, reason)
    try:
        p.cinder.attachment_delete(p.admin, attachment["id"])
    except Exception:
        p.report.deleted_attachments.remove(entry)
        raise
