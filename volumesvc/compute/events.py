"""External instance events on the compute: volume-extended, power-update, network.

Why a module of its own: the extend flow has two shapes and several failure
exits, and the manager stays a thin RPC surface (doc/source/contributor/contract.rst §7).

* ``volume-extended`` below 2.105 (Nova 2.51): Cinder has already extended
  the volume and committed its size. Store that size in the BDM and grow the
  guest disk to it.
* ``volume-extended`` from 2.105 (spec 3, ``completion`` set by the API) for a
  volume Cinder left ``extending``: the target size is ``extend_new_size`` in
  the volume's metadata; grow the guest disk to it and tell Cinder how it went
  with ``os-extend_volume_completion`` (``error`` false or true). Cinder then
  commits the size (``in-use``) or rolls back (``error_extending``). Any
  other volume status keeps the 2.51 flow. The event is a cast: one that
  died with this compute's process left Cinder waiting in ``extending``
  for ever, so the compute's start-up pass (``compute/reconcile_runner.py``)
  finishes every extend still waiting for one of its servers
  (:meth:`ExternalEvents.resume_extend`), or completes it with error.
* ``power-update`` (2.76): the power state changed outside volumesvc; the
  instance record follows it.
* ``volume-reimaged`` (2.93): Cinder finished (or failed) the os-reimage a
  rebuild asked for. The rebuild waits for it while it holds the instance
  lock, so the event goes to :class:`EventWaiters` before any lock is taken;
  one nobody waits for (late, after a timeout or a compute restart) is
  logged and dropped, and the manager asks the reconciliation to connect
  the root volume Cinder let go of.
* network events: nothing to do on a volume-only compute; logged.

An encrypted volume the host decrypts (os-brick's dm-crypt mapping) needs
its key to grow that mapping: it is read from the key manager with the
event's context before the driver resizes anything.

Every outcome of a volume-extended event is an instance-action event
``compute_extend_volume`` (Success/Error with the reason) under the
``extend_volume`` action the API recorded.
"""

import threading

from oslo_log import log as logging

from volumesvc import exception, keymgr
from volumesvc.compute import bdm as bdm_mod
from volumesvc.compute import encryption as compute_encryption
from volumesvc.compute import reporter as compute_reporter
from volumesvc.states import power_state, vm_states

LOG = logging.getLogger(__name__)

GiB = 1024 ** 3
VOLUME_EXTENDED = "volume-extended"
POWER_UPDATE = "power-update"
VOLUME_REIMAGED = "volume-reimaged"
POWER_ON, POWER_OFF = "POWER_ON", "POWER_OFF"
EXTENDING = "extending"
EXTEND_NEW_SIZE = "extend_new_size"

# power-update tag -> (vm_state, power_state) the instance record takes.
_POWER_TARGETS = {POWER_ON: (vm_states.ACTIVE, power_state.RUNNING),
                  POWER_OFF: (vm_states.STOPPED, power_state.SHUTDOWN)}


def target_size(volume):
    """The size Cinder asks for (``extend_new_size``), or raise with why not.

    Cinder 29 with the test-only extension shows the admin metadata key in
    ``metadata`` as a string; it must be a whole number above the current size.
    """
    volume_id = volume["id"]
    raw = (volume.get("metadata") or {}).get(EXTEND_NEW_SIZE)
    if raw is None:
        raise exception.ExtendVolumeFailed(
            volume_id=volume_id, reason=f"the volume has no {EXTEND_NEW_SIZE} metadata")
    try:
        size = int(str(raw).strip())
    except ValueError:
        raise exception.ExtendVolumeFailed(
            volume_id=volume_id,
            reason=f"{EXTEND_NEW_SIZE} {raw!r} is not a whole number of GiB") from None
    if size <= int(volume.get("size") or 0):
        raise exception.ExtendVolumeFailed(
            volume_id=volume_id,
            reason=f"{EXTEND_NEW_SIZE} {size} is not larger than the current size "
                   f"{volume.get('size')}")
    return size


class Waiter:
    """One awaited event; ``wait`` returns its status, or None on timeout."""

    def __init__(self):
        self._arrived = threading.Event()
        self.status = None

    def deliver(self, status):
        self.status = status or "completed"
        self._arrived.set()

    def wait(self, timeout):
        return self.status if self._arrived.wait(timeout) else None


class EventWaiters:
    """Events a workflow on this compute is waiting for, keyed (instance, name, tag).

    A workflow registers before it starts what makes the event come (so an
    early event is not lost), waits, and always forgets the key afterwards.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._waiting: dict[tuple, Waiter] = {}

    def prepare(self, instance_uuid, name, tag) -> Waiter:
        waiter = Waiter()
        with self._lock:
            self._waiting[(instance_uuid, name, tag)] = waiter
        return waiter

    def forget(self, instance_uuid, name, tag):
        with self._lock:
            self._waiting.pop((instance_uuid, name, tag), None)

    def deliver(self, instance_uuid, event) -> bool:
        """Hand ``event`` to its waiter; False when nobody waits for it."""
        key = (instance_uuid, event.get("name"), event.get("tag"))
        with self._lock:
            waiter = self._waiting.pop(key, None)
        if waiter is None:
            return False
        waiter.deliver(event.get("status"))
        return True


class ExternalEvents:
    """Handles the events of one instance; one per compute process, stateless."""

    def __init__(self, conf, driver, conductor, cinder, reporter, keys=None):
        self.conf = conf
        self.driver = driver
        self.conductor = conductor
        self.cinder = cinder
        self.reporter = reporter
        #: the key manager adapter: the key of a volume the host decrypts
        self.keys = keys or keymgr.KeyManager(conf)

    def handle(self, context, instance, driver_instance, events):
        """Run each event; one failing never stops the others (the API already answered)."""
        for event in events:
            name, tag = event.get("name"), event.get("tag")
            try:
                if name == VOLUME_EXTENDED:
                    self.extend_volume(context, instance, driver_instance, tag,
                                       completion=bool(event.get("completion")))
                elif name == POWER_UPDATE:
                    self.power_update(context, instance, tag)
                elif name == VOLUME_REIMAGED:
                    LOG.warning("Event %s-%s for instance %s arrived when no rebuild waits "
                                "for it (timed out, failed or interrupted already); ignored "
                                "by the rebuild, the root volume is reconciled", name, tag,
                                instance["uuid"])
                else:
                    LOG.info("Received event %s-%s (%s) for instance %s; nothing to do "
                             "on this host", name, tag, event.get("status"),
                             instance["uuid"])
            except Exception as exc:  # noqa: BLE001 - a cast reports through the DB
                LOG.warning("Event %s-%s for instance %s failed: %s", name, tag,
                            instance["uuid"], compute_reporter.message_of(exc))

    # -- volume-extended ------------------------------------------------------

    def extend_volume(self, context, instance, driver_instance, volume_id, *,
                      completion=False):
        """Grow the guest disk of ``volume_id``; complete with Cinder when it waits."""
        uuid = instance["uuid"]
        with self.reporter.event(context, uuid, "compute_extend_volume"):
            bdm = self._bdm(context, uuid, volume_id)
            volume = self.cinder.get(context, volume_id)
            if completion and volume.get("status") == EXTENDING:
                self._extend_and_complete(context, driver_instance, bdm, volume)
                return
            if bdm is None:
                LOG.warning("Volume %s is not attached to instance %s; volume-extended "
                            "ignored", volume_id, uuid)
                return
            self._extend_legacy(context, driver_instance, bdm, volume)

    def resume_extend(self, context, instance, driver_instance, volume_id) -> bool:
        """Finish an extend Cinder still waits for; False when it waits for nothing.

        Only a volume ``extending`` *with* its ``extend_new_size`` waits for
        a compute: without it Cinder is still at its own part (or extends by
        itself), and its event, if any, is still to come. The outcome is
        Cinder's completion either way: the guest grown and the size
        committed, or ``error=True`` with why logged and raised. An event
        that arrives later finds the volume no longer ``extending`` and only
        resizes to the committed size again (the 2.51 flow), which changes
        nothing.
        """
        volume = self.cinder.get(context, volume_id)
        if volume.get("status") != EXTENDING or \
                EXTEND_NEW_SIZE not in (volume.get("metadata") or {}):
            return False
        LOG.warning("Volume %s of instance %s waits in %s for a compute to complete its "
                    "extend (the volume-extended event was lost with an earlier process); "
                    "completing it now", volume_id, instance["uuid"], EXTENDING)
        self._extend_and_complete(context, driver_instance,
                                  self._bdm(context, instance["uuid"], volume_id), volume)
        return True

    def _bdm(self, context, instance_uuid, volume_id):
        for bdm in bdm_mod.listed(self.conductor, context, instance_uuid):
            if bdm.volume_id == volume_id:
                return bdm
        return None

    def _extend_legacy(self, context, driver_instance, bdm, volume):
        """Nova 2.51: Cinder already committed ``size``; make the guest see it."""
        if not bdm.has_connection:
            LOG.warning("Volume %s of instance %s has no connection_info; nothing to "
                        "resize", volume["id"], driver_instance["uuid"])
            return
        size = int(volume["size"])
        self.conductor.bdm_update(context, bdm_uuid=bdm.uuid, values={"volume_size": size})
        self.driver.check_extend()
        seen = self._resize(context, driver_instance, bdm, volume["id"], size)
        LOG.info("Volume %s of instance %s resized to %d GiB (the guest sees %s bytes)",
                 volume["id"], driver_instance["uuid"], size, seen)

    def _extend_and_complete(self, context, driver_instance, bdm, volume):
        """Spec 3: resize to extend_new_size, then report the outcome to Cinder."""
        volume_id = volume["id"]
        try:
            if bdm is None:
                raise exception.ExtendVolumeFailed(
                    volume_id=volume_id,
                    reason=f"it is not attached to instance {driver_instance['uuid']}")
            size = target_size(volume)
            if not bdm.has_connection:
                raise exception.ExtendVolumeFailed(volume_id=volume_id,
                                                   reason="the BDM has no connection_info")
            self.driver.check_extend()
            seen = self._resize(context, driver_instance, bdm, volume_id, size)
        except Exception as exc:
            LOG.error("Extend of volume %s on instance %s failed, completing with error: "
                      "%s", volume_id, driver_instance["uuid"], compute_reporter.message_of(exc))
            self._complete(context, volume_id, error=True)
            raise
        self.conductor.bdm_update(context, bdm_uuid=bdm.uuid, values={"volume_size": size})
        self._complete(context, volume_id, error=False)
        LOG.info("Volume %s of instance %s resized to %d GiB (the guest sees %s bytes) and "
                 "completed with Cinder", volume_id, driver_instance["uuid"], size, seen)

    def _resize(self, context, driver_instance, bdm, volume_id, size_gb):
        connection_info = bdm.connection_info
        try:
            key = compute_encryption.key_to_extend(context, keys=self.keys, driver=self.driver,
                                                   connection_info=connection_info)
            seen = self.driver.extend_volume(connection_info, driver_instance, size_gb * GiB,
                                             key=key)
        except exception.VolumesvcException as exc:
            raise exception.ExtendVolumeFailed(
                volume_id=volume_id, reason=compute_reporter.message_of(exc)) from exc
        if seen is not None and seen < size_gb * GiB:
            raise exception.ExtendVolumeFailed(
                volume_id=volume_id,
                reason=f"the guest sees {seen} bytes after the resize, not {size_gb} GiB")
        return seen

    def _complete(self, context, volume_id, *, error):
        """os-extend_volume_completion; a failure is logged and re-raised for the event."""
        try:
            self.cinder.extend_volume_completion(context, volume_id, error)
        except Exception as exc:
            LOG.error("os-extend_volume_completion(error=%s) of volume %s failed: %s",
                      error, volume_id, compute_reporter.message_of(exc))
            raise exception.ExtendCompletionFailed(
                volume_id=volume_id, error=error,
                reason=compute_reporter.message_of(exc)) from exc

    # -- power-update ---------------------------------------------------------

    def power_update(self, context, instance, tag):
        """Record a power change made outside volumesvc (Nova 2.76).

        Only an instance with no task in progress follows the event, so it
        never overwrites the state a running operation is about to set.
        """
        uuid = instance["uuid"]
        target = _POWER_TARGETS.get(tag)
        if target is None:
            LOG.warning("power-update with unknown tag %r for instance %s ignored", tag, uuid)
            return
        vm_state, power = target
        with self.reporter.event(context, uuid, "compute_power_update"):
            try:
                self.conductor.instance_update(
                    context, instance_uuid=uuid,
                    values={"vm_state": vm_state, "power_state": power},
                    expected_task_state=[None], check_task_state=True)
            except exception.UnexpectedTaskStateError:
                LOG.info("power-update %s for instance %s ignored: a task is in progress",
                         tag, uuid)
