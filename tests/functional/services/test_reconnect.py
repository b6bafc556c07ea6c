"""A hard reboot, a start and an unshelve in place connect every volume again (fake://).

After the host itself restarted, what a saved connection points at may be
gone (an iSCSI session, an NFS mount) or back under another name (a SCSI
device). The ``local`` volume driver of each compute is wrapped so that
connecting "finds" the volume at a new path, a symlink to its file: the
domain must be rebuilt on that path and the BDM must keep it. A soft reboot
keeps the running domain and connects nothing.
"""

import json
import os

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import block_device as bdm_obj

TOKEN = "u1:p1"


class MovingConnector:
    """Connecting a ``local`` volume again puts it at a new path (a symlink to the file)."""

    def __init__(self, directory):
        self.directory = directory
        self.connects = []

    def install(self, compute_driver):
        local = compute_driver.volume_drivers.get({"driver_volume_type": "local"})
        connect = local.connect_volume

        def moving_connect(connection_info):
            connect(connection_info)
            data = connection_info["data"]
            volume_id = connection_info["serial"]
            self.connects.append(volume_id)
            target = os.path.realpath(data["device_path"])
            moved = os.path.join(self.directory, f"{volume_id}-{len(self.connects)}")
            os.symlink(target, moved)
            data["device_path"] = moved

        local.connect_volume = moving_connect
        return self


@pytest.fixture
def world(tmp_path):
    """(stack, the compute's driver, connector, server, its root volume and a data volume)."""
    stack = Stack(tmp_path, hosts=("host-a",))
    try:
        (server,) = stack.boot_active(1, BLANK_ROOT)
        data = stack.cinder.create(stack.context(), 1, "data", "")["id"]
        stack.attach_volume(server, data)
        stack.wait(lambda: _bdm(stack, server, data).get("connection_info"),
                   what="data volume attached")
        driver = stack.computes["host-a"].manager.driver
        moves = tmp_path / "moved"
        moves.mkdir()
        connector = MovingConnector(str(moves)).install(driver)
        root = next(b.volume_id for b in _bdms(stack, server) if b.boot_index == 0)
        yield stack, driver, connector, server, root, data
    finally:
        stack.stop()


def _bdms(stack, server):
    return bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)


def _bdm(stack, server, volume_id):
    (bdm,) = [b.to_dict() for b in _bdms(stack, server) if b.volume_id == volume_id]
    return bdm


def _saved_path(stack, server, volume_id):
    return json.loads(_bdm(stack, server, volume_id)["connection_info"])["data"]["device_path"]


def _action(stack, server, body, status):
    stack.api("POST", f"/servers/{server}/action", body, token=TOKEN, status=202)
    stack.wait_for_server_status(server, status)


def _assert_rebuilt_on_new_paths(stack, driver, connector, server, volumes):
    assert sorted(connector.connects) == sorted(volumes)
    xml = driver.get_domain_xml({"uuid": server})
    for volume_id in volumes:
        path = _saved_path(stack, server, volume_id)
        assert path.endswith(f"{volume_id}-{connector.connects.index(volume_id) + 1}")
        assert f"'{path}'" in xml.replace('"', "'"), (path, xml)


def test_a_hard_reboot_connects_every_volume_again_and_keeps_the_new_paths(world):
    stack, driver, connector, server, root, data = world
    _action(stack, server, {"reboot": {"type": "SOFT"}}, "ACTIVE")
    assert connector.connects == []  # the running domain keeps its devices

    _action(stack, server, {"reboot": {"type": "HARD"}}, "ACTIVE")
    _assert_rebuilt_on_new_paths(stack, driver, connector, server, [root, data])


def test_a_start_connects_every_volume_again(world):
    stack, driver, connector, server, root, data = world
    _action(stack, server, {"os-stop": None}, "SHUTOFF")
    assert connector.connects == []
    _action(stack, server, {"os-start": None}, "ACTIVE")
    _assert_rebuilt_on_new_paths(stack, driver, connector, server, [root, data])


def test_an_unshelve_on_the_same_host_connects_every_volume_again(world):
    stack, driver, connector, server, root, data = world
    stack.conf.set_override("shelved_offload_time", -1)  # shelved, never offloaded
    _action(stack, server, {"shelve": None}, "SHELVED")
    assert connector.connects == []
    _action(stack, server, {"unshelve": None}, "ACTIVE")
    _assert_rebuilt_on_new_paths(stack, driver, connector, server, [root, data])


def test_a_volume_that_cannot_be_connected_again_fails_the_start_with_a_fault(world):
    stack, driver, connector, server, root, data = world
    _action(stack, server, {"os-stop": None}, "SHUTOFF")
    local = driver.volume_drivers.get({"driver_volume_type": "local"})
    moving = local.connect_volume

    def gone(connection_info):
        if connection_info["serial"] == data:
            from volumesvc import exception
            raise exception.VirtDriverError(reason="no iSCSI session to the target")
        moving(connection_info)

    local.connect_volume = gone
    stack.api("POST", f"/servers/{server}/action", {"os-start": None}, token=TOKEN,
              status=202)
    stack.wait(lambda: stack.server(server, "2.1")["status"] == "SHUTOFF"
               and stack.server(server, "2.1").get("OS-EXT-STS:task_state") is None
               and _start_failed(stack, server), what="start failed and recorded")
    # Nothing was half-made: both volumes keep their BDM and their attachment.
    assert {b.volume_id for b in _bdms(stack, server)} == {root, data}
    assert stack.cinder.get(None, data)["status"] == "in-use"


def _start_failed(stack, server):
    from volumesvc.objects import instance_action as action_obj

    actions = action_obj.list_actions(stack.db, stack.admin_context(), server)
    start = next((a for a in actions if a.action == "start"), None)
    if start is None:
        return False
    detail = action_obj.get_action(stack.db, stack.admin_context(), server, start.request_id)
    return any(e.result == "Error" for e in detail.events)
