"""Detach and delete of a multiattach volume shared by several servers (fake://).

FakeCinder's volumes are files (``driver_volume_type: local``), which have
no host-side connection; a :class:`RecordingConnector` wrapped around the
``local`` volume driver makes the connect/disconnect calls each compute
makes visible. Two servers share the volume on ``host-a`` and a third
on ``host-b``.
"""

import functools
import time

import pytest

from tests.fixtures.together import run_together
from tests.functional.stack import Stack
from volumesvc.objects import block_device as bdm_obj

TOKEN = "u1:p1"


class RecordingConnector:
    """Records the host-side connect/disconnect of one compute's ``local`` volumes.

    It wraps the ``local`` volume driver of the compute's libvirt driver,
    which still does its own (empty) host work.
    """

    def __init__(self):
        self.calls = []

    def install(self, compute_driver):
        local = compute_driver.volume_drivers.get({"driver_volume_type": "local"})
        connect, disconnect = local.connect_volume, local.disconnect_volume

        def recording_connect(connection_info):
            self.calls.append(("connect", connection_info["serial"]))
            connect(connection_info)

        def recording_disconnect(connection_info):
            self.calls.append(("disconnect", connection_info["serial"]))
            disconnect(connection_info)

        local.connect_volume = recording_connect
        local.disconnect_volume = recording_disconnect
        return self

    def of(self, volume_id):
        return [kind for kind, vid in self.calls if vid == volume_id]


@pytest.fixture
def shared(tmp_path):
    """(stack, {host: connector}, servers on host-a, server on host-b, volume id)."""
    stack = Stack(tmp_path, hosts=("host-a",))
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    connectors = {}
    on_a = stack.boot_active(2)
    stack.add_compute("host-b")
    (on_b,) = stack.boot_active()  # host-b now has fewer servers
    for host, service in stack.computes.items():
        connectors[host] = RecordingConnector().install(service.manager.driver)
    volume_id = stack.cinder.create(stack.context(), 1, "shared", "",
                                    volume_type="multi")["id"]
    for uuid in (*on_a, on_b):
        stack.attach_volume(uuid, volume_id, version="2.79", delete_on_termination=True)
    _wait_attachments(stack, volume_id, 3)
    yield stack, connectors, on_a, on_b, volume_id
    stack.stop()


def _wait_attachments(stack, volume_id, count):
    def check():
        volume = stack.cinder.volumes.get(volume_id)
        if count == 0:
            return volume is None or (volume["status"] == "available"
                                      and not volume["attachments"])
        return volume and volume["status"] == "in-use" and \
            len(volume["attachments"]) == count
    stack.wait(check, what=f"{count} attachments of {volume_id}")


def _detach(stack, server, volume_id):
    stack.api("DELETE", f"/servers/{server}/os-volume_attachments/{volume_id}",
              token=TOKEN, status=202)


def test_the_host_connection_stays_until_the_last_server_on_the_host_leaves(shared):
    stack, connectors, (first, second), on_b, volume_id = shared
    for connector in connectors.values():
        connector.calls.clear()
    entries = {e["server_id"]: e["attachment_id"]
               for e in stack.cinder.get(None, volume_id)["attachments"]}

    _detach(stack, first, volume_id)
    _wait_attachments(stack, volume_id, 2)
    # Only the first server's attachment went; host-a keeps its connection.
    left = {e["server_id"]: e["attachment_id"]
            for e in stack.cinder.get(None, volume_id)["attachments"]}
    assert left == {second: entries[second], on_b: entries[on_b]}
    assert connectors["host-a"].of(volume_id) == []

    _detach(stack, on_b, volume_id)
    _wait_attachments(stack, volume_id, 1)
    # The only server on host-b: its host disconnects, host-a is untouched.
    assert connectors["host-b"].of(volume_id) == ["disconnect"]
    assert connectors["host-a"].of(volume_id) == []

    _detach(stack, second, volume_id)
    _wait_attachments(stack, volume_id, 0)
    assert connectors["host-a"].of(volume_id) == ["disconnect"]
    assert stack.cinder.get(None, volume_id)["status"] == "available"


def test_every_attach_connects_on_its_host(tmp_path):
    stack = Stack(tmp_path, hosts=("host-a",))
    try:
        stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
        connector = RecordingConnector().install(stack.computes["host-a"].manager.driver)
        servers = stack.boot_active(2)
        volume_id = stack.cinder.create(stack.context(), 1, "shared", "",
                                        volume_type="multi")["id"]
        for uuid in servers:
            stack.attach_volume(uuid, volume_id)
        _wait_attachments(stack, volume_id, 2)
        assert connector.of(volume_id) == ["connect", "connect"]
    finally:
        stack.stop()


def test_delete_on_termination_leaves_the_volume_to_the_others_until_the_last(shared):
    stack, connectors, (first, second), on_b, volume_id = shared
    for connector in connectors.values():
        connector.calls.clear()
    stack.api("DELETE", f"/servers/{first}", token=TOKEN, status=204)
    stack.wait_for_server_gone(first)
    _wait_attachments(stack, volume_id, 2)
    assert volume_id in stack.cinder.volumes
    assert connectors["host-a"].of(volume_id) == []  # the second server still uses it

    stack.api("DELETE", f"/servers/{on_b}", token=TOKEN, status=204)
    stack.wait_for_server_gone(on_b)
    _wait_attachments(stack, volume_id, 1)
    assert connectors["host-b"].of(volume_id) == ["disconnect"]

    stack.api("DELETE", f"/servers/{second}", token=TOKEN, status=204)
    stack.wait_for_server_gone(second)
    stack.wait(lambda: volume_id not in stack.cinder.volumes,
               what="the volume deleted with its last server")
    assert connectors["host-a"].of(volume_id) == ["disconnect"]
    assert bdm_obj.list_by_volume(stack.db, stack.admin_context(), volume_id) == []


def _shared_by(tmp_path, servers, timeout):
    """A multiattach volume attached to ``servers`` servers on two hosts.

    Cinder's attachment delete is slowed down so that a detach holds the
    volume ``detaching`` long enough for the others sent with it to meet
    the refusal for certain (a real backend's terminate_connection).
    """
    stack = Stack(tmp_path, hosts=("host-a", "host-b"), conf_overrides={
        ("cinder", "begin_detaching_timeout"): timeout,
        ("cinder", "attachment_reserve_interval"): 0.05})
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    uuids = stack.boot_active(servers)
    volume_id = stack.cinder.create(stack.context(), 1, "shared", "",
                                    volume_type="multi")["id"]
    for uuid in uuids:
        stack.attach_volume(uuid, volume_id, version="2.79")
    _wait_attachments(stack, volume_id, servers)
    delete = stack.cinder.attachment_delete

    def slow_delete(*args, **kwargs):
        time.sleep(0.3)
        return delete(*args, **kwargs)

    stack.cinder.attachment_delete = slow_delete
    return stack, uuids, volume_id


def _detach_together(stack, servers, volume_id):
    """DELETE the volume from every server at once; the status codes in server order."""
    def detach(client, server_id):
        return client.delete(f"/v2.1/servers/{server_id}/os-volume_attachments/{volume_id}",
                             headers={"X-Auth-Token": TOKEN,
                                      "OpenStack-API-Version": "compute 2.101"}).status_code

    return run_together([functools.partial(detach, stack.app.test_client(), server_id)
                         for server_id in servers])


@pytest.mark.parametrize("servers", [2, 5])
def test_detaches_of_one_multiattach_volume_sent_together_all_succeed(tmp_path, servers):
    stack, uuids, volume_id = _shared_by(tmp_path, servers, timeout=30.0)
    try:
        assert _detach_together(stack, uuids, volume_id) == [202] * servers
        # Each one waited for the detach before it: Cinder refused them meanwhile.
        begun = [args for name, args in stack.cinder.calls if name == "begin_detaching"]
        assert len(begun) > servers
        _wait_attachments(stack, volume_id, 0)
        stack.wait(lambda: bdm_obj.list_by_volume(
            stack.db, stack.admin_context(), volume_id) == [], what="every BDM gone")
    finally:
        stack.stop()


def test_without_the_wait_the_detaches_after_the_first_are_refused(tmp_path):
    """As Nova (``[cinder] begin_detaching_timeout = 0``): Cinder's 400 goes to the client."""
    stack, uuids, volume_id = _shared_by(tmp_path, 3, timeout=0)
    try:
        codes = _detach_together(stack, uuids, volume_id)
        assert sorted(codes) == [202, 400, 400]
        _wait_attachments(stack, volume_id, 2)
    finally:
        stack.stop()
