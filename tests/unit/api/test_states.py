"""The state gates of doc/source/contributor/contract.rst §2: messages, order, tables."""

import datetime

import pytest

from volumesvc import exception
from volumesvc.api.logic import states
from volumesvc.context import RequestContext

UUID = "44444444-4444-4444-4444-444444444444"
LAUNCHED = datetime.datetime(2024, 1, 1)
USER = RequestContext(user_id="u", project_id="p", is_admin=False)
ADMIN = RequestContext(user_id="admin", project_id="p", is_admin=True)


def _inst(vm_state="active", task_state=None, locked=False, launched_at=LAUNCHED):
    return {"uuid": UUID, "vm_state": vm_state, "task_state": task_state, "locked": locked,
            "launched_at": launched_at}


def _message(gate, instance, ctx=USER):
    with pytest.raises(exception.VolumesvcException) as info:
        states.check_gate(ctx, instance, gate)
    return info.value.format_message()


def test_vm_state_message():
    assert _message(states.REBOOT_SOFT, _inst("stopped")) == \
        f"Cannot 'reboot' instance {UUID} while it is in vm_state stopped"


def test_task_state_message():
    assert _message(states.REBOOT_SOFT, _inst(task_state="rebooting")) == \
        f"Cannot 'reboot' instance {UUID} while it is in task_state rebooting"


def test_launched_at_message():
    assert _message(states.CREATE_IMAGE, _inst(launched_at=None)) == \
        f"Cannot 'createImage' instance {UUID} while it is in launched_at None"


def test_lock_before_state_and_admin_bypass():
    locked = _inst("stopped", locked=True)
    assert _message(states.REBOOT_SOFT, locked) == f"Instance {UUID} is locked"
    assert "vm_state stopped" in _message(states.REBOOT_SOFT, locked, ADMIN)


def test_create_image_ignores_lock():
    states.check_gate(USER, _inst(locked=True), states.CREATE_IMAGE)


@pytest.mark.parametrize("vm_state", sorted(states.HARD_REBOOT_VM_STATES))
@pytest.mark.parametrize("task_state", sorted(states.HARD_REBOOT_TASK_STATES, key=str))
def test_hard_reboot_allowed(vm_state, task_state):
    states.check_gate(USER, _inst(vm_state, task_state), states.REBOOT_HARD)


@pytest.mark.parametrize("vm_state", ["building", "rescued", "resized", "soft-delete",
                                      "shelved", "shelved_offloaded", "deleted"])
def test_hard_reboot_refused_vm_states(vm_state):
    assert f"vm_state {vm_state}" in _message(states.REBOOT_HARD, _inst(vm_state))


@pytest.mark.parametrize("task_state", ["deleting", "image_snapshot", "rebuilding",
                                        "powering-off"])
def test_hard_reboot_refused_task_states(task_state):
    assert f"task_state {task_state}" in _message(states.REBOOT_HARD, _inst(task_state=task_state))


def test_tables():
    assert states.SOFT_REBOOT_VM_STATES == {"active"}
    assert states.CREATE_IMAGE_VM_STATES == {"active", "stopped", "paused", "suspended"}
    assert states.ATTACH.vm_states == {"active", "paused", "stopped", "resized", "soft-delete",
                                       "shelved", "shelved_offloaded"}
    assert states.SWAP.vm_states == {"active", "paused", "resized"}
    for gate in (states.ATTACH, states.DETACH, states.SWAP, states.REBOOT_SOFT,
                 states.CREATE_IMAGE):
        assert gate.task_states == {None}
    assert not states.DELETE.must_have_launched


def test_vm_states_override_for_shelved_below_2_20():
    below = states.ATTACH.vm_states - states.SHELVED_STATES
    with pytest.raises(exception.InstanceInvalidState):
        states.check_gate(USER, _inst("shelved"), states.ATTACH, vm_states=below)


def test_works_on_objects_too():
    from volumesvc.objects.instance import Instance

    inst = Instance(uuid=UUID, vm_state="error", task_state=None, launched_at=LAUNCHED)
    states.check_gate(USER, inst, states.REBOOT_HARD)
    with pytest.raises(exception.InstanceInvalidState):
        states.check_gate(USER, inst, states.REBOOT_SOFT)
