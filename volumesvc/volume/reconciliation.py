"""What a reconciliation of volume attachments reports, and where it reads Cinder from.

Why a module of its own, below the compute and ``volumesvc-manage``: the
compute reconciles (``compute/reconcile.py``), the manage command lists
Cinder once for a walk over every server and prints the compute's
reports. Both need the report's shape and the Cinder views; neither may
reach into the other's internals.
"""

import dataclasses
import enum
import functools

import oslo_messaging as messaging

from volumesvc import exception
from volumesvc.volume import cinder as cinder_adapter


class Reason(enum.StrEnum):
    """Why a server was not (fully) reconciled: what decides whether to try again.

    Decided from the exception's class, never from a message: a programming
    error must not pass for Cinder being down and be retried for ever.
    """

    NOT_FOUND = "not_found"
    NOT_LAUNCHED = "not_launched"
    IN_TASK = "in_task"
    OTHER_HOST = "other_host"
    CINDER_UNAVAILABLE = "cinder_unavailable"   # no answer, or a 5xx
    CINDER_REFUSED = "cinder_refused"           # a 4xx: asking again changes nothing
    CONDUCTOR_UNAVAILABLE = "conductor_unavailable"
    FAILED = "failed"                           # another error of ours (a VolumesvcException)
    BUG = "bug"                                 # anything else: logged with its traceback


# Reasons that go away on their own: a watch tries again later.
RETRIED = frozenset({Reason.IN_TASK, Reason.CINDER_UNAVAILABLE,
                     Reason.CONDUCTOR_UNAVAILABLE})


def reason_of(exc) -> Reason:
    """The :class:`Reason` for an exception raised while reconciling."""
    if isinstance(exc, exception.CinderConnectionFailed):
        return Reason.CINDER_UNAVAILABLE
    if isinstance(exc, exception.CinderAPIError):
        code = exc.code if isinstance(exc.code, int) else 500
        return Reason.CINDER_UNAVAILABLE if code >= 500 else Reason.CINDER_REFUSED
    if isinstance(exc, exception.Forbidden):
        return Reason.CINDER_REFUSED
    if isinstance(exc, (messaging.MessagingTimeout, messaging.MessageDeliveryFailure)):
        return Reason.CONDUCTOR_UNAVAILABLE
    if isinstance(exc, exception.InstanceNotFound):
        return Reason.NOT_FOUND
    if isinstance(exc, exception.VolumesvcException):
        return Reason.FAILED
    return Reason.BUG


@dataclasses.dataclass
class Report:
    """What one reconciliation of one server found and did (JSON-able via to_dict).

    ``reason`` says why it was skipped, or why a step of it failed when that
    is a reason worth another pass (a :class:`Reason`); it stays on the
    compute (``to_dict`` leaves it out), ``skipped`` is the operator's text.
    """

    instance_uuid: str
    dry_run: bool = False
    removed_bdms: list = dataclasses.field(default_factory=list)
    deleted_attachments: list = dataclasses.field(default_factory=list)
    finished: list = dataclasses.field(default_factory=list)
    rolled_back: list = dataclasses.field(default_factory=list)
    busy: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)
    skipped: str | None = None
    reason: Reason | None = None

    @property
    def changed(self) -> bool:
        return bool(self.removed_bdms or self.deleted_attachments or self.finished
                    or self.rolled_back)

    @property
    def retry(self) -> bool:
        """Worth another pass later: work in progress, or a reason that goes away."""
        return bool(self.busy) or self.reason in RETRIED

    def remaining(self, bdms) -> list:
        """``bdms`` without those this (real) reconciliation removed or rolled back.

        ``bdms``: the compute's views (``compute/bdm.py``), whose only user this is.
        """
        if self.dry_run:
            return list(bdms)
        # A rolled-back attach loses its BDM, and so does a finished detach.
        gone = self.removed_bdms + [r for r in self.rolled_back if r.get("work") != "detach"]
        gone += [f for f in self.finished if f.get("work") == "detach"]
        removed = {r["bdm_uuid"] for r in gone}
        return [b for b in bdms if b.uuid not in removed]

    def to_dict(self) -> dict:
        body = dataclasses.asdict(self)
        del body["reason"]
        return body

    def summary(self) -> str:
        """One line per change, for logs and instance action details."""
        verb = "would " if self.dry_run else ""
        lines = [f"{verb}remove BDM of volume {r['volume_id']} (attachment "
                 f"{r['attachment_id']}): {r['reason']}" for r in self.removed_bdms]
        lines += [f"{verb}delete Cinder attachment {a['attachment_id']} of volume "
                  f"{a['volume_id']}: {a['reason']}" for a in self.deleted_attachments]
        lines += [f"{verb}finish interrupted {f.get('work', 'attach')} of volume "
                  f"{f['volume_id']}" for f in self.finished]
        lines += [f"{verb}roll back {r.get('work', 'attach')} of volume {r['volume_id']}: "
                  f"{r['reason']}" for r in self.rolled_back]
        return "\n".join(lines)


# -- the Cinder side -------------------------------------------------------------------


class InstanceView:
    """One server's attachments, listed when asked (``GET /attachments?instance_id=``).

    Asked under the server's instance lock, so the listing is as fresh as
    the BDMs: an attachment no BDM knows is not an attach in progress.
    """

    listed_under_lock = True

    def __init__(self, cinder, context, page_size):
        self._cinder = cinder
        self._context = context
        self._page_size = page_size

    def attachments(self, instance_uuid):
        page = functools.partial(self._cinder.attachment_list_page, self._context,
                                 instance_id=instance_uuid)
        return cinder_adapter.list_all(page, self._page_size)

    def suspect_volume(self, volume_id) -> bool:
        """Every volume is read (one GET per BDM): a server has few."""
        return True


class SnapshotView:
    """Many servers from one listing of every attachment and every ``available`` volume.

    Requests grow with pages of attachments, not with servers. A BDM is only
    suspected (and then confirmed with a GET) when its attachment is missing
    from the listing or its volume was listed ``available``. Listed before
    any lock was taken: an attachment in progress without a BDM may belong
    to an attach that began since, so it must be older than the timeout.
    """

    listed_under_lock = False

    def __init__(self, attachments, available_volume_ids):
        self._by_instance: dict[str | None, list[dict]] = {}
        for attachment in attachments:
            self._by_instance.setdefault(attachment.get("instance"), []).append(attachment)
        self._available = frozenset(available_volume_ids)

    @classmethod
    def fetch(cls, cinder, context, page_size):
        attachments = cinder_adapter.list_all(
            functools.partial(cinder.attachment_list_page, context), page_size)
        available = cinder_adapter.list_all(
            functools.partial(cinder.volume_id_page, context, status="available"),
            page_size, key=lambda volume_id: volume_id)
        return cls(attachments, available)

    def attachments(self, instance_uuid):
        return list(self._by_instance.get(instance_uuid, ()))

    def suspect_volume(self, volume_id) -> bool:
        return volume_id in self._available

    def for_instances(self, instance_uuids):
        """(attachments, available ids) restricted to what these servers hold (RPC-sized)."""
        attachments = [a for uuid in instance_uuids for a in self._by_instance.get(uuid, ())]
        return attachments, sorted(self._available)
