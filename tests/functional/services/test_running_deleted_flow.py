"""Regression: servers deleted while their compute only looked down kept running.

A benchmark run starved a compute's heartbeats; the conductor deleted its
servers locally (record gone, Cinder attachments released) while their QEMU
domains kept running and holding their volumes open, so a
delete-on-termination volume could not be deleted (its image was busy) and
stayed ``available``. The compute's periodic check of domains of deleted
servers now destroys them.
"""

import logging
import time

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc import exception
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj

HOST = "fn-compute"


def _domains(stack):
    return set(stack.computes[HOST].manager.driver.list_instance_uuids())


def _busy_while_running(stack):
    """Cinder refuses to delete a volume while a domain of this host still has it open."""
    cinder = stack.cinder
    delete = cinder.delete

    def refusing(context, volume_id):
        holders = {b.instance_uuid for b in bdm_obj.list_by_volume(
            stack.db, stack.admin_context(), volume_id, read_deleted="yes")}
        if holders & _domains(stack):
            raise exception.Invalid(reason=f"rbd image of volume {volume_id} is busy")
        return delete(context, volume_id)
    cinder.delete = refusing


def _look_down(stack):
    """Heartbeats stop (next one in an hour) while the compute keeps serving."""
    stack.computes[HOST].conf.set_override("report_interval", 3600)
    time.sleep(1.2)
    stack.conf.set_override("service_down_time", 1)
    time.sleep(1.5)


def _delete_while_down(stack):
    """A server whose compute looks down, deleted through the API; its root volume id."""
    server = stack.boot(stack.context(), BLANK_ROOT)
    stack.wait_instance(server, "active")
    (bdm,) = bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)
    return server, bdm.volume_id


def _check(stack):
    """One run of the compute's periodic task, as its runner makes it."""
    manager = stack.computes[HOST].manager
    manager._cleanup_running_deleted_instances(stack.admin_context())


def test_the_domain_of_a_server_deleted_locally_is_reaped(stack, caplog):
    _busy_while_running(stack)
    server, volume_id = _delete_while_down(stack)
    building, _ = _delete_while_down(stack)
    # A build still in progress here: its domain must never be touched.
    instance_obj.save(stack.db, stack.admin_context(), building,
                      {"vm_state": "building", "task_state": "spawning"})
    _look_down(stack)
    caplog.set_level(logging.WARNING)
    stack.api("DELETE", f"/servers/{server}", status=204)
    stack.wait_for_server_gone(server)
    assert any("may still be running" in r.getMessage() for r in caplog.records)
    # The bug: the domain runs on, its delete-on-termination volume stays.
    assert server in _domains(stack)
    assert stack.cinder.volumes[volume_id]["status"] == "available"

    _check(stack)

    assert server not in _domains(stack)
    assert volume_id not in stack.cinder.volumes
    assert building in _domains(stack)
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(),
                                    building).vm_state == "building"


def test_action_log_leaves_the_domain_with_a_warning(stack, caplog):
    server, _ = _delete_while_down(stack)
    _look_down(stack)
    stack.api("DELETE", f"/servers/{server}", status=204)
    stack.wait_for_server_gone(server)
    stack.computes[HOST].conf.set_override("running_deleted_instance_action", "log")
    caplog.set_level(logging.WARNING)

    _check(stack)

    assert server in _domains(stack)
    assert any(server in r.getMessage() and "still running" in r.getMessage()
               and r.levelname == "WARNING" for r in caplog.records)


@pytest.fixture
def polling_stack(tmp_path):
    s = Stack(tmp_path, hosts=())
    s.add_compute(HOST, overrides={(None, "running_deleted_instance_poll_interval"): 1})
    yield s
    s.stop()


def test_the_periodic_task_runs_on_its_interval(polling_stack):
    stack = polling_stack
    server, _ = _delete_while_down(stack)
    _look_down(stack)
    stack.api("DELETE", f"/servers/{server}", status=204)
    stack.wait_for_server_gone(server)
    stack.wait(lambda: server not in _domains(stack), timeout=10,
               what="the domain of the deleted server reaped by the periodic task")
