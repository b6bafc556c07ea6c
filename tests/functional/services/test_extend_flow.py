"""volume-extended end to end on fake://: API, conductor, compute, fake libvirt, FakeCinder.

The 2.51 flow (Cinder already extended) and the 2.105 completion flow (Cinder
waits in ``extending``), with each of the completion's failure exits: every
one must leave Cinder ``error_extending`` at the old size and say why in the
instance action.
"""

import os

import pytest

from tests.functional.stack import BLANK_ROOT as ROOT
from tests.functional.stack import Stack
from volumesvc import exception
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance_action as action_obj

GiB = 1024 ** 3
HOST = "fn-compute"


def _attached_volume(stack, server, size=1):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, size, "data", "")
    stack.api("POST", f"/servers/{server}/os-volume_attachments",
              {"volumeAttachment": {"volumeId": volume["id"]}}, version="2.100",
              token="u1:p1", status=200)
    stack.wait(lambda: stack.cinder.get(ctx, volume["id"])["status"] == "in-use",
               what="in-use")
    return volume["id"]


def _post_event(stack, server, volume_id, version):
    _, body, headers = stack.api("POST", "/os-server-external-events", {"events": [
        {"name": "volume-extended", "server_uuid": server, "tag": volume_id}]},
        version=version, status=200)
    return body["events"][0], headers["x-openstack-request-id"]


def _extend_action(stack, server, request_id):
    """The extend_volume action once its compute event finished."""
    ctx = stack.admin_context()

    def finished():
        try:
            action = action_obj.get_action(stack.db, ctx, server, request_id)
        except exception.NotFound:
            return None
        return action if action.events and all(e.result for e in action.events) else None
    action = stack.wait(finished, what="compute_extend_volume finished")
    assert action.action == "extend_volume"
    (event,) = action.events
    assert event.event == "compute_extend_volume"
    return event


def _guest_capacity(stack, server, volume_id, host=HOST):
    guest = stack.computes[host].manager.driver.host.get_guest(server)
    disk = guest.find_disk(serial=volume_id)
    return guest.block_capacity(disk.target_dev)


def _bdm_size(stack, server, volume_id):
    return bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), volume_id,
                                              server).volume_size


def _file_size(stack, volume_id):
    return os.path.getsize(stack.cinder._path(volume_id))


def test_2_51_resizes_the_guest_to_the_size_cinder_committed(stack, server):
    volume_id = _attached_volume(stack, server)
    stack.cinder.extend(stack.context(), volume_id, 2)
    event, request_id = _post_event(stack, server, volume_id, "2.51")
    assert (event["code"], event["status"]) == (200, "completed")
    assert _extend_action(stack, server, request_id).result == "Success"
    assert _guest_capacity(stack, server, volume_id) == 2 * GiB
    assert _bdm_size(stack, server, volume_id) == 2
    assert not [c for c in stack.cinder.calls if c[0] == "extend_volume_completion"]


def test_2_105_completes_an_extending_volume(stack, server):
    volume_id = _attached_volume(stack, server)
    stack.cinder.hold_extend = True
    stack.cinder.extend(stack.context(), volume_id, 2)
    assert _file_size(stack, volume_id) == GiB  # Cinder did not touch the file
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    assert _extend_action(stack, server, request_id).result == "Success"
    volume = stack.cinder.get(None, volume_id)
    assert (volume["status"], volume["size"]) == ("in-use", 2)
    assert _file_size(stack, volume_id) == 2 * GiB  # grown by the block resize
    assert _guest_capacity(stack, server, volume_id) == 2 * GiB
    assert _bdm_size(stack, server, volume_id) == 2
    assert ("extend_volume_completion", (volume_id, False)) in stack.cinder.calls


def test_2_105_on_a_volume_cinder_already_extended_keeps_the_2_51_flow(stack, server):
    volume_id = _attached_volume(stack, server)
    stack.cinder.extend(stack.context(), volume_id, 3)
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    assert _extend_action(stack, server, request_id).result == "Success"
    assert _guest_capacity(stack, server, volume_id) == 3 * GiB
    assert not [c for c in stack.cinder.calls if c[0] == "extend_volume_completion"]


def _assert_completed_with_error(stack, server, volume_id, request_id, reason):
    event = _extend_action(stack, server, request_id)
    assert event.result == "Error"
    assert reason in event.details, event.details
    volume = stack.cinder.get(None, volume_id)
    assert (volume["status"], volume["size"]) == ("error_extending", 1)
    assert ("extend_volume_completion", (volume_id, True)) in stack.cinder.calls
    assert _bdm_size(stack, server, volume_id) in (None, 1)


@pytest.mark.parametrize("value, reason", [
    (None, "has no extend_new_size metadata"),
    ("two", "is not a whole number of GiB"),
    ("1", "is not larger than the current size 1"),
], ids=["missing", "not-a-number", "not-larger"])
def test_bad_extend_new_size_completes_with_error(stack, server, value, reason, caplog):
    volume_id = _attached_volume(stack, server)
    stack.cinder.hold_extend = True
    stack.cinder.extend(stack.context(), volume_id, 2)
    stack.cinder.show_metadata(volume_id, "extend_new_size", value)
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    _assert_completed_with_error(stack, server, volume_id, request_id, reason)
    assert _guest_capacity(stack, server, volume_id) == GiB
    assert reason in caplog.text


def test_resize_failure_completes_with_error(stack, server):
    volume_id = _attached_volume(stack, server)
    # The disk leaves the domain behind the compute's back: the resize finds nothing.
    guest = stack.computes[HOST].manager.driver.host.get_guest(server)
    disk = guest.find_disk(serial=volume_id)
    guest.detach_device(disk.xml, live=True, persistent=True)
    stack.cinder.hold_extend = True
    stack.cinder.extend(stack.context(), volume_id, 2)
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    _assert_completed_with_error(stack, server, volume_id, request_id,
                                 f"Extending volume {volume_id} failed")


def test_completion_failure_is_recorded_and_the_compute_goes_on(stack, server):
    volume_id = _attached_volume(stack, server)
    stack.cinder.hold_extend = True
    stack.cinder.extend(stack.context(), volume_id, 2)
    stack.cinder.fail_next("extend_volume_completion",
                           exception.CinderConnectionFailed(reason="Cinder is down"))
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    event = _extend_action(stack, server, request_id)
    assert event.result == "Error" and "Cinder is down" in event.details
    assert "os-extend_volume_completion" in event.details
    # The compute still serves: a later extend completes.
    stack.cinder.extend_volume_completion(None, volume_id, False)  # an operator finishes it
    stack.cinder.extend(stack.context(), volume_id, 3)
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    assert _extend_action(stack, server, request_id).result == "Success"
    assert stack.cinder.get(None, volume_id)["size"] == 3


def test_driver_without_extend_completes_with_error(tmp_path):
    stack = Stack(tmp_path, conf_overrides={
        ("virt", "disabled_capabilities"): ["supports_extend_volume"]})
    try:
        server = stack.boot(stack.context(), ROOT)
        stack.wait_instance(server, "active")
        volume_id = _attached_volume(stack, server)
        stack.cinder.hold_extend = True
        stack.cinder.extend(stack.context(), volume_id, 2)
        _, request_id = _post_event(stack, server, volume_id, "2.105")
        _assert_completed_with_error(stack, server, volume_id, request_id,
                                     "not supported by the hypervisor")
    finally:
        stack.stop()







class _Killed(BaseException):
    """The compute process dying: no handler of the step runs any more."""


def _compute_dies_in_the_extend(stack, server, monkeypatch):
    """A 2.105 extend whose compute dies in the resize; the compute is started again.

    Returns the volume and the request id of the event that died.
    """
    volume_id = _attached_volume(stack, server)
    driver = stack.computes[HOST].manager.driver
    entered = []

    def die(*args, **kwargs):
        entered.append(args)
        raise _Killed()
    monkeypatch.setattr(driver, "extend_volume", die)
    stack.cinder.hold_extend = True
    stack.cinder.extend(stack.context(), volume_id, 2)
    _post_event(stack, server, volume_id, "2.105")
    stack.wait(lambda: entered, what="the compute in extend_volume")
    monkeypatch.undo()
    assert stack.cinder.get(None, volume_id)["status"] == "extending"
    return volume_id, driver


def test_compute_start_finishes_an_extend_whose_event_died_with_it(stack, server,
                                                                   monkeypatch):
    """Regression (kill matrix, extend-2.105 with the compute killed in extend_volume):
    the volume-extended cast died with the compute and Cinder waited in ``extending``
    for ever. The compute started again grows the guest and completes the extend."""
    volume_id, driver = _compute_dies_in_the_extend(stack, server, monkeypatch)
    stack.computes.pop(HOST).stop()
    stack.add_compute(HOST, driver=driver)  # the domain outlived the agent

    volume = stack.cinder.get(None, volume_id)
    assert (volume["status"], volume["size"]) == ("in-use", 2)
    assert ("extend_volume_completion", (volume_id, False)) in stack.cinder.calls
    assert _guest_capacity(stack, server, volume_id) == 2 * GiB
    assert _file_size(stack, volume_id) == 2 * GiB
    assert _bdm_size(stack, server, volume_id) == 2
    # A second extend goes through as ever.
    stack.cinder.extend(stack.context(), volume_id, 3)
    _, request_id = _post_event(stack, server, volume_id, "2.105")
    assert _extend_action(stack, server, request_id).result == "Success"
    assert stack.cinder.get(None, volume_id)["size"] == 3


def test_compute_start_ends_an_extend_it_cannot_finish_with_an_error_completion(
        stack, server, monkeypatch):
    """The disk is gone when the compute is back: Cinder is told (error), not left waiting."""
    volume_id, driver = _compute_dies_in_the_extend(stack, server, monkeypatch)
    guest = driver.host.get_guest(server)
    guest.detach_device(guest.find_disk(serial=volume_id).xml, live=True, persistent=True)
    stack.computes.pop(HOST).stop()
    stack.add_compute(HOST, driver=driver)

    volume = stack.cinder.get(None, volume_id)
    assert (volume["status"], volume["size"]) == ("error_extending", 1)
    assert ("extend_volume_completion", (volume_id, True)) in stack.cinder.calls


def test_compute_start_leaves_an_extend_cinder_has_not_handed_over(stack, server):
    """``extending`` without extend_new_size: Cinder is still at its part; its event comes."""
    volume_id = _attached_volume(stack, server)
    stack.cinder.hold_extend = True
    stack.cinder.extend(stack.context(), volume_id, 2)
    stack.cinder.show_metadata(volume_id, "extend_new_size", None)
    old = stack.computes.pop(HOST)
    old.stop()
    stack.add_compute(HOST, driver=old.manager.driver)

    assert stack.cinder.get(None, volume_id)["status"] == "extending"
    assert not [c for c in stack.cinder.calls if c[0] == "extend_volume_completion"]
