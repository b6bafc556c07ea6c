"""Instance-state gates of the volume operations (doc/source/contributor/contract.rst §2), as data.

Every operation that cares about an instance's state names a :class:`Gate`
from :data:`GATES`; :func:`check_gate` applies it in Nova's order (lock,
vm_state, task_state, launched_at), so all handlers answer the same 409 with
the same message. The attachments, servers and server-action handlers share
these gates: the table in the contract is written down once, here. The state
values themselves come from ``states/vm_states.py`` and
``states/task_states.py``, which the conductor and compute use too.
"""

import dataclasses

from volumesvc import exception
from volumesvc.states import task_states, vm_states

# Sentinel: the operation does not look at this attribute at all.
ANY = None


@dataclasses.dataclass(frozen=True)
class Gate:
    """What one operation requires of an instance.

    ``vm_states``/``task_states`` are the allowed values (``ANY`` = not
    checked; ``None`` inside ``task_states`` means "no task running").
    ``action`` is the name in the 409 message (Nova's method name).
    """

    action: str
    vm_states: frozenset | None
    task_states: frozenset | None
    check_lock: bool = True
    must_have_launched: bool = True


_NO_TASK = frozenset({None})

# attach/detach also allow shelved/shelved_offloaded, but only from 2.20
# (the handler removes them below that: see SHELVED_STATES).
ATTACH_VM_STATES = frozenset({
    vm_states.ACTIVE, vm_states.PAUSED, vm_states.STOPPED, vm_states.RESIZED,
    vm_states.SOFT_DELETED, vm_states.SHELVED, vm_states.SHELVED_OFFLOADED})
SHELVED_STATES = frozenset({vm_states.SHELVED, vm_states.SHELVED_OFFLOADED})
SWAP_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.PAUSED, vm_states.RESIZED})
SOFT_REBOOT_VM_STATES = frozenset({vm_states.ACTIVE})
HARD_REBOOT_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.STOPPED, vm_states.PAUSED,
                                   vm_states.SUSPENDED, vm_states.ERROR})
# Nova's task_states.ALLOW_REBOOT: a hard reboot may interrupt these.
HARD_REBOOT_TASK_STATES = frozenset({
    None, task_states.REBOOTING, task_states.REBOOT_PENDING, task_states.REBOOT_STARTED,
    task_states.REBOOTING_HARD, task_states.RESUMING, task_states.PAUSING,
    task_states.UNPAUSING, task_states.SUSPENDING})
CREATE_IMAGE_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.STOPPED, vm_states.PAUSED,
                                    vm_states.SUSPENDED})
# Nova's compute API: stop from active/error, start from stopped, shelve from
# any state with a domain, offload only when shelved, unshelve from both.
STOP_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.ERROR})
START_VM_STATES = frozenset({vm_states.STOPPED})
SHELVE_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.STOPPED, vm_states.PAUSED,
                              vm_states.SUSPENDED})
SHELVE_OFFLOAD_VM_STATES = frozenset({vm_states.SHELVED})
UNSHELVE_VM_STATES = SHELVED_STATES
# Nova's rebuild: active, stopped or error, no task.
REBUILD_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.STOPPED, vm_states.ERROR})
# Nova's update/delete of server metadata, and its server tag changes.
METADATA_VM_STATES = frozenset({vm_states.ACTIVE, vm_states.PAUSED, vm_states.SUSPENDED,
                                vm_states.STOPPED})
TAGS_VM_STATES = METADATA_VM_STATES | SHELVED_STATES

# The §2 table. Keys are what handlers pass to check_gate().
GATES = {
    "attach_volume": Gate("attach_volume", ATTACH_VM_STATES, _NO_TASK),
    "detach_volume": Gate("detach_volume", ATTACH_VM_STATES, _NO_TASK),
    "swap_volume": Gate("swap_volume", SWAP_VM_STATES, _NO_TASK),
    "reboot_soft": Gate("reboot", SOFT_REBOOT_VM_STATES, _NO_TASK),
    "reboot_hard": Gate("reboot", HARD_REBOOT_VM_STATES, HARD_REBOOT_TASK_STATES),
    # NOTE: Nova's snapshot_volume_backed has no check_instance_lock.
    "create_image": Gate("createImage", CREATE_IMAGE_VM_STATES, _NO_TASK, check_lock=False),
    "delete": Gate("delete", ANY, ANY, must_have_launched=False),
    "stop": Gate("stop", STOP_VM_STATES, _NO_TASK),
    "start": Gate("start", START_VM_STATES, _NO_TASK),
    "shelve": Gate("shelve", SHELVE_VM_STATES, _NO_TASK),
    "shelve_offload": Gate("shelve_offload", SHELVE_OFFLOAD_VM_STATES, _NO_TASK),
    "unshelve": Gate("unshelve", UNSHELVE_VM_STATES, _NO_TASK),
    "rebuild": Gate("rebuild", REBUILD_VM_STATES, _NO_TASK),
    "update_attachment": Gate("update_attachment", ANY, ANY, check_lock=False,
                              must_have_launched=False),
    "update_metadata": Gate("update_metadata", METADATA_VM_STATES, _NO_TASK),
    "delete_metadata": Gate("delete_metadata", METADATA_VM_STATES, _NO_TASK),
    # NOTE: Nova's tag routes check the vm_state only: no lock, task or launch.
    "update_tags": Gate("update tags", TAGS_VM_STATES, ANY, check_lock=False,
                        must_have_launched=False),
    "delete_tags": Gate("delete tags", TAGS_VM_STATES, ANY, check_lock=False,
                        must_have_launched=False),
    # Nova's live_migrate_force_complete and live_migrate_abort (2.22, 2.24).
    "force_complete": Gate("force_complete", frozenset({vm_states.ACTIVE}),
                           frozenset({task_states.MIGRATING})),
    "abort_live_migration": Gate("abort live migration", ANY,
                                 frozenset({task_states.MIGRATING})),
}

ATTACH = GATES["attach_volume"]
DETACH = GATES["detach_volume"]
SWAP = GATES["swap_volume"]
REBOOT_SOFT = GATES["reboot_soft"]
REBOOT_HARD = GATES["reboot_hard"]
CREATE_IMAGE = GATES["create_image"]
DELETE = GATES["delete"]
STOP = GATES["stop"]
START = GATES["start"]
SHELVE = GATES["shelve"]
SHELVE_OFFLOAD = GATES["shelve_offload"]
UNSHELVE = GATES["unshelve"]
REBUILD = GATES["rebuild"]
UPDATE_METADATA = GATES["update_metadata"]
DELETE_METADATA = GATES["delete_metadata"]
UPDATE_TAGS = GATES["update_tags"]
DELETE_TAGS = GATES["delete_tags"]
FORCE_COMPLETE = GATES["force_complete"]
ABORT_LIVE_MIGRATION = GATES["abort_live_migration"]


def _attr(instance, name):
    return instance.get(name) if isinstance(instance, dict) else getattr(instance, name)


def invalid_state(instance, action, attr, state=None) -> exception.InstanceInvalidState:
    """Nova's 409: ``Cannot '<action>' instance <uuid> while it is in <attr> <state>``."""
    uuid = _attr(instance, "uuid")
    if state is None:
        state = _attr(instance, attr)
    return exception.InstanceInvalidState(
        f"Cannot '{action}' instance {uuid} while it is in {attr} {state}",
        instance_uuid=uuid, attr=attr, state=state, method=action)


def check_instance_state(instance, *, action, vm_states=ANY, task_states=ANY):
    """Raise InstanceInvalidState (409) unless the states are allowed.

    ``vm_states``/``task_states``: allowed values, ``ANY`` to skip the check.
    vm_state is checked first, as in Nova.
    """
    if vm_states is not ANY and _attr(instance, "vm_state") not in vm_states:
        raise invalid_state(instance, action, "vm_state")
    if task_states is not ANY and _attr(instance, "task_state") not in task_states:
        raise invalid_state(instance, action, "task_state")


def check_launched(instance, *, action):
    """An instance that never ran has nothing to reboot, snapshot or attach to."""
    if not _attr(instance, "launched_at"):
        raise invalid_state(instance, action, "launched_at", None)


def check_instance_lock(ctx, instance):
    """A locked instance refuses mutating calls (409), except from an admin."""
    if _attr(instance, "locked") and not getattr(ctx, "is_admin", False):
        raise exception.InstanceIsLocked(instance_uuid=_attr(instance, "uuid"))


def check_gate(ctx, instance, gate: Gate, *, vm_states=None):
    """Apply ``gate`` in Nova's order: lock, vm_state, task_state, launched_at.

    ``vm_states`` overrides the gate's (attach/detach below 2.20 drop the
    shelved states).
    """
    if gate.check_lock:
        check_instance_lock(ctx, instance)
    check_instance_state(instance, action=gate.action,
                         vm_states=gate.vm_states if vm_states is None else vm_states,
                         task_states=gate.task_states)
    if gate.must_have_launched:
        check_launched(instance, action=gate.action)
