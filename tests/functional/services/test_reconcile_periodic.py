"""The optional periodic reconciliation of a compute's idle servers (issue 10)."""

import pytest

from tests.fixtures.cinder import CountingCinder
from tests.functional.stack import Stack
from volumesvc import periodic
from volumesvc.compute import manager as compute_manager
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.states import task_states

HOST = "fn-compute"


@pytest.fixture
def periodic_stack(tmp_path):
    s = Stack(tmp_path, cinder_wrapper=CountingCinder, conf_overrides={
        ("compute", "dangling_attachment_reconcile_interval"): 1})
    yield s
    s.stop()


def test_off_by_default(stack):
    tasks = periodic.tasks_of(stack.computes[HOST].manager, stack.computes[HOST].conf)
    task = next(t for t in tasks if "reconcile" in t.name)
    assert task.interval == 0
    assert compute_manager.ComputeManager._reconcile_dangling_attachments


def _volume_ids(stack, server):
    return {b.volume_id for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(),
                                                          server) if b.volume_id}


def test_the_periodic_task_repairs_idle_servers_and_leaves_busy_ones(periodic_stack):
    stack = periodic_stack
    ctx = stack.admin_context()
    idle, busy = stack.populate_attached_servers(2)
    instance_obj.save(stack.db, ctx, busy[0], {"task_state": task_states.REBOOTING})
    for _uuid, _volume_id, attachment_id in (idle, busy):
        stack.cinder.inner.attachment_delete(ctx, attachment_id)  # behind our back
    stack.wait(lambda: idle[1] not in _volume_ids(stack, idle[0]), timeout=15,
               what="the idle server's dangling BDM removed by the periodic task")
    assert busy[1] in _volume_ids(stack, busy[0])  # in a task: left to its workflow
    # One listing serves the host: no per-server listing.
    assert stack.cinder.by_method.get("attachment_list_page", 0) >= 1
    assert stack.cinder.by_method.get("get", 0) == 0
