"""Rebuild of volume-backed servers, end to end (API → conductor → compute).

FakeCinder reimages in a thread and posts ``volume-reimaged`` to the API as
Cinder does; the compute runs the libvirt driver on the fake libvirt. The
root volume's file, the BDMs, the Cinder attachments and the domain's disks
are read after each rebuild, and the refusals are checked per microversion.
"""

import logging
import xml.etree.ElementTree as ET

import pytest

from tests.functional import killing
from tests.functional.stack import BLANK_ROOT
from volumesvc.compute import rebuild as rebuild_mod
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import instance_fault as fault_obj

TOKEN = "u1:p1"
HOST = "fn-compute"
PATTERN = b"REBUILT-ROOT-" * 1000


@pytest.fixture
def image(stack):
    return stack.glance.create(stack.context(), name="new", owner="p1", data=PATTERN)["id"]


def _rebuild(stack, uuid, image_id, version="2.93", status=202, **fields):
    return stack.api("POST", f"/servers/{uuid}/action",
                     {"rebuild": {"imageRef": image_id, **fields}}, version=version,
                     token=TOKEN, status=status)[1]


def _root(stack, uuid):
    return next(b for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(), uuid)
                if b.boot_index == 0)


def _root_bytes(stack, uuid, size):
    with open(stack.cinder._path(_root(stack, uuid).volume_id), "rb") as f:
        return f.read(size)


def _serials(stack, uuid):
    xml = stack.computes[HOST].manager.driver.get_domain_xml({"uuid": uuid})
    return sorted(s.text for s in ET.fromstring(xml).iterfind(".//disk/serial"))


def _events(stack, uuid):
    """{event: result} of the newest ``rebuild`` action, once its events are finished."""
    actions = action_obj.list_actions(stack.db, stack.admin_context(), uuid)
    rebuild = next(a for a in actions if a.action == "rebuild")
    return {e.event: e.result
            for e in stack.events(stack.admin_context(), uuid, rebuild.request_id)}


def _fault(stack, uuid):
    faults = fault_obj.latest_for_instances(stack.db, stack.admin_context(), [uuid])
    return faults[uuid].message


def test_new_image_at_2_93_reimages_the_root_volume_and_keeps_data_volumes(
        stack, server, image):
    data = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server, data, version="2.60")
    stack.wait(lambda: stack.cinder.get(None, data)["status"] == "in-use", what="in-use")
    root_id = _root(stack, server).volume_id

    _, body, headers = stack.api(
        "POST", f"/servers/{server}/action", {"rebuild": {
            "imageRef": image, "name": "renamed", "metadata": {"k": "v"},
            "adminPass": "secret-pw", "description": "again"}},
        version="2.93", token=TOKEN, status=202)
    assert headers["Location"].endswith(f"/servers/{server}")
    shown = body["server"]
    assert shown["status"] == "REBUILD"
    assert shown["OS-EXT-STS:task_state"] == "rebuilding"
    assert (shown["name"], shown["metadata"], shown["description"]) == (
        "renamed", {"k": "v"}, "again")
    assert shown["adminPass"] == "secret-pw"
    assert shown["image"] == ""  # a volume-backed server shows no image, as Nova
    assert shown["user_data"] is None

    after = stack.wait_for_server_status(server, "ACTIVE", version="2.93")
    assert after["image"] == ""
    assert _root(stack, server).volume_id == root_id
    assert _root_bytes(stack, server, len(PATTERN)) == PATTERN
    volume = stack.cinder.get(None, root_id)
    assert volume["status"] == "in-use"
    assert volume["volume_image_metadata"]["image_id"] == image
    assert _serials(stack, server) == sorted([root_id, data])
    assert stack.cinder.get(None, data)["status"] == "in-use"
    for volume_id in (root_id, data):
        records = [a for a in stack.cinder.attachments.values()
                   if a["volume_id"] == volume_id]
        assert [(a["status"], a["instance"]) for a in records] == [("attached", server)]
    assert _events(stack, server) == {"compute_rebuild_instance": "Success"}
    assert stack.notifier.of("instance.rebuild.start")
    assert stack.notifier.of("instance.rebuild.end")


def test_new_image_below_2_93_is_refused(stack, server, image):
    status, body, _ = stack.api("POST", f"/servers/{server}/action",
                                {"rebuild": {"imageRef": image}}, version="2.92", token=TOKEN)
    assert status == 400
    assert body["badRequest"]["message"] == (
        f"Image {image} is unacceptable: Unable to rebuild with a different image for a "
        "volume-backed server.")
    inst = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert (inst.vm_state, inst.task_state) == ("active", None)
    assert not [c for c in stack.cinder.calls if c[0] == "reimage"]


def test_same_image_at_2_1_recreates_the_domain_without_reimage(stack, image):
    bdms = [{"source_type": "image", "destination_type": "volume", "boot_index": 0,
             "image_id": image, "volume_size": 1, "delete_on_termination": True}]
    uuid = stack.boot(stack.context(), bdms)
    stack.wait_instance(uuid, "active")
    root_id = _root(stack, uuid).volume_id
    with open(stack.cinder._path(root_id), "r+b") as f:
        f.write(b"guest data")

    body = _rebuild(stack, uuid, image, version="2.1")
    assert "OS-EXT-STS:task_state" not in body["server"]  # hidden below 2.75, as Nova
    assert "key_name" not in body["server"] and "user_data" not in body["server"]
    stack.wait_for_server_status(uuid, "ACTIVE")
    assert _root_bytes(stack, uuid, 10) == b"guest data"
    assert not [c for c in stack.cinder.calls if c[0] == "reimage"]
    assert _serials(stack, uuid) == [root_id]
    assert _events(stack, uuid) == {"compute_rebuild_instance": "Success"}


def test_stopped_server_is_stopped_again_after_rebuild(stack, server, image):
    stack.api("POST", f"/servers/{server}/action", {"os-stop": None}, token=TOKEN,
              status=202)
    stack.wait_for_server_status(server, "SHUTOFF")
    _rebuild(stack, server, image)
    stack.wait_instance(server, "stopped")
    assert _root_bytes(stack, server, len(PATTERN)) == PATTERN
    assert stack.cinder.get(None, _root(stack, server).volume_id)["status"] == "in-use"


def test_cinder_reimage_error_puts_the_server_in_error_with_a_fault(stack, server, image):
    stack.cinder.reimage_outcome = "error"
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ERROR")
    root_id = _root(stack, server).volume_id
    assert "Cinder put the volume in error status" in _fault(stack, server)
    assert root_id in _fault(stack, server)
    assert stack.cinder.get(None, root_id)["status"] == "error"
    assert _events(stack, server) == {"compute_rebuild_instance": "Error"}
    assert stack.notifier.of("instance.rebuild.error")


@pytest.fixture
def quick_stack(tmp_path):
    from tests.functional.stack import Stack

    s = Stack(tmp_path, conf_overrides={("compute", "reimage_timeout_per_gb"): 1})
    yield s
    s.stop()


def _image_and_server(stack):
    """A new image and an ACTIVE server booted from a blank volume."""
    image = stack.glance.create(stack.context(), name="new", owner="p1", data=PATTERN)["id"]
    server = stack.boot(stack.context(), BLANK_ROOT)
    stack.wait_instance(server, "active")
    return image, server


def test_lost_volume_reimaged_event_times_out_and_rebuild_again_repairs(quick_stack):
    stack = quick_stack
    image, server = _image_and_server(stack)
    stack.cinder.reimage_outcome = "silent"
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ERROR")
    assert "no volume-reimaged event from Cinder within 1 seconds" in _fault(stack, server)
    root_id = _root(stack, server).volume_id
    assert stack.cinder.get(None, root_id)["status"] == "reserved"

    stack.cinder.reimage_outcome = "ok"
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ACTIVE")
    assert stack.cinder.get(None, root_id)["status"] == "in-use"
    assert _serials(stack, server) == [root_id]


def test_refusals_by_version_state_and_body(stack, server, image):
    path = f"/servers/{server}/action"

    def call(body, version="2.93", token=TOKEN):
        return stack.api("POST", path, {"rebuild": body}, version=version, token=token)

    assert call({"imageRef": image, "key_name": "k"}, version="2.53")[0] == 400
    status, body, _ = call({"imageRef": image, "key_name": "nope"}, version="2.54")
    assert (status, body["badRequest"]["message"]) == (400, "Invalid key_name provided.")
    assert call({"imageRef": image, "user_data": "aGk="}, version="2.56")[0] == 400
    status, body, _ = call({"imageRef": image, "trusted_image_certificates": ["c"]})
    assert status == 400
    assert "not supported for volume-backed servers" in body["badRequest"]["message"]
    status, body, _ = call({"imageRef": "6b2f1a4e-0000-4000-8000-000000000000"})
    assert (status, body["badRequest"]["message"]) == (400, "Cannot find image for rebuild")
    assert call({"imageRef": image, "hostname": "a.b"}, version="2.90")[0] == 400
    assert call({"imageRef": image, "personality": []}, version="2.57")[0] == 400
    assert call({"imageRef": image}, token="u2:p2")[0] == 404

    stack.api("POST", path, {"lock": None}, token=TOKEN, status=202)
    assert call({"imageRef": image})[0] == 409
    stack.api("POST", path, {"unlock": None}, token=TOKEN, status=202)
    stack.api("POST", path, {"shelve": None}, token=TOKEN, status=202)
    stack.wait_for_server_status(server, "SHELVED_OFFLOADED")
    status, body, _ = call({"imageRef": image})
    assert status == 409 and "shelved_offloaded" in body["conflictingRequest"]["message"]
    assert not [c for c in stack.cinder.calls if c[0] == "reimage"]


def test_body_fields_of_later_versions(stack, server, image):
    stack.api("POST", "/os-keypairs", {"keypair": {"name": "k1"}}, version="2.10",
              token=TOKEN, status=201)
    body = _rebuild(stack, server, image, version="2.94", key_name="k1",
                    user_data="aGVsbG8=", hostname="web.example.org")["server"]
    assert body["key_name"] == "k1"
    assert body["user_data"] == "aGVsbG8="
    assert body["OS-EXT-SRV-ATTR:hostname"] == "web.example.org"
    stack.wait_for_server_status(server, "ACTIVE")
    body = _rebuild(stack, server, image, version="2.94", key_name=None,
                    user_data=None)["server"]
    assert body["key_name"] is None and body["user_data"] is None
    stack.wait_for_server_status(server, "ACTIVE")


def _root_attachments(stack, uuid):
    root = _root(stack, uuid)
    return root, [(a["id"], a["status"]) for a in stack.cinder.attachments.values()
                  if a["volume_id"] == root.volume_id]


def test_a_failed_rebuilds_root_volume_is_connected_again_not_rolled_back(quick_stack):
    """Regression: the reconciliation took the released root for an abandoned attach.

    A rebuild that timed out leaves the root's attachment ``reserved``
    without a connection; the next reconciliation deleted it with the BDM.
    """
    stack = quick_stack
    image, server = _image_and_server(stack)
    stack.cinder.reimage_outcome = "silent"
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ERROR")
    root, attachments = _root_attachments(stack, server)
    assert attachments == [(root.attachment_id, "reserved")]

    stack.computes[HOST].manager.reconciler.watch(server, 0)
    stack.wait(lambda: stack.cinder.get(None, root.volume_id)["status"] == "in-use",
               what="the root volume connected again")
    again, attachments = _root_attachments(stack, server)
    assert attachments == [(root.attachment_id, "attached")]
    assert (again.uuid, again.attachment_id) == (root.uuid, root.attachment_id)
    assert again.connection_info

    stack.cinder.reimage_outcome = "ok"
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ACTIVE")
    assert _root_bytes(stack, server, len(PATTERN)) == PATTERN
    assert _serials(stack, server) == [root.volume_id]



def _rebuild_dying_in(stack, monkeypatch, method):
    """A server whose 2.93 rebuild is in the driver's ``method`` when its compute dies.

    Returns (image, server, driver): the compute is still to be stopped
    (``killing.stop_compute``) and started again on ``driver``.
    """
    image, server = _image_and_server(stack)
    driver = stack.computes[HOST].manager.driver
    entered = killing.dies_in(monkeypatch, driver, method)
    _rebuild(stack, server, image)
    stack.wait(lambda: entered, what=f"the rebuild in {method}")
    return image, server, driver


def test_a_compute_killed_during_the_reimage_ends_the_rebuild_when_it_starts(
        quick_stack, monkeypatch, caplog):
    """Regression: the server stayed REBUILD for ever, its root volume ``reserved``.

    The compute dies while Cinder reimages; the reimage still runs when the
    compute is back. The restarted compute puts the server in ERROR with a
    fault saying so; Cinder's late ``volume-reimaged`` finds no rebuild and
    has the root volume connected again; a second rebuild works.
    """
    caplog.set_level(logging.WARNING, logger="volumesvc.compute")
    stack = quick_stack
    image, server = _image_and_server(stack)
    stack.cinder.reimage_seconds = 3
    waiting = killing.dies_in(monkeypatch, rebuild_mod.Rebuilder, "_wait")
    _rebuild(stack, server, image)
    stack.wait(lambda: waiting, what="the rebuild waiting for Cinder")
    root, attachments = _root_attachments(stack, server)
    assert stack.cinder.get(None, root.volume_id)["status"] == "downloading"
    assert attachments == [(root.attachment_id, "reserved")]
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), server).task_state == \
        "rebuilding"
    killing.stop_compute(stack, monkeypatch, HOST)
    stack.add_compute(HOST)

    shown = stack.wait_for_server_status(server, "ERROR", version="2.93")
    assert shown["OS-EXT-STS:task_state"] is None
    assert f"The rebuild of instance {server} was interrupted" in shown["fault"]["message"]
    stack.wait(lambda: stack.cinder.get(None, root.volume_id)["status"] == "in-use",
               timeout=30, what="the root volume connected again after the reimage")
    again, attachments = _root_attachments(stack, server)
    assert attachments == [(root.attachment_id, "attached")]
    assert again.connection_info
    assert "arrived when no rebuild waits for it" in caplog.text

    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ACTIVE")
    assert _root_bytes(stack, server, len(PATTERN)) == PATTERN
    assert _serials(stack, server) == [root.volume_id]
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.wait_for_server_gone(server)
    assert root.volume_id not in stack.cinder.volumes


def test_a_compute_killed_while_spawning_keeps_the_root_volume(quick_stack, monkeypatch):
    """Killed after the root was connected again, before its attachment was completed.

    The attachment is ``attaching``: the start-up pass must not take it for
    an interrupted attach (which it rolls back when the disk cannot be put
    into the domain: there is none), but connect and complete it.
    """
    stack = quick_stack
    image, server, driver = _rebuild_dying_in(stack, monkeypatch, "spawn")
    root, attachments = _root_attachments(stack, server)
    assert attachments == [(root.attachment_id, "attaching")]
    assert root.connection_info
    killing.stop_compute(stack, monkeypatch, HOST)
    stack.add_compute(HOST, driver=driver)

    stack.wait_for_server_status(server, "ERROR")
    stack.wait(lambda: stack.cinder.get(None, root.volume_id)["status"] == "in-use",
               what="the root volume completed")
    assert _root_attachments(stack, server)[1] == [(root.attachment_id, "attached")]
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ACTIVE")
    assert _serials(stack, server) == [root.volume_id]


def test_a_compute_killed_releasing_the_root_keeps_it_connected_here(stack, monkeypatch):
    """Regression: the root volume stayed ``reserved`` for ever, the server unbootable.

    Killed between the root's new attachment (no connector, saved in the
    BDM) and the disconnect of the old one: Cinder still has the old one,
    connected to this host. The start-up pass connected the new one
    first, which Cinder refuses while the old one holds the same
    connector ("duplicate connectors"), then deleted the old one: the
    volume was left ``reserved`` with no connection. Now the old one goes
    first and the root is connected and completed again. (The default
    reimage timeout: the second rebuild's volume-reimaged event can take
    longer than quick_stack's one second on a loaded machine.)
    """
    image, server, driver = _rebuild_dying_in(stack, monkeypatch, "disconnect_volume")
    root, attachments = _root_attachments(stack, server)
    assert len(attachments) == 2
    assert (root.attachment_id, "reserved") in attachments
    killing.stop_compute(stack, monkeypatch, HOST)
    stack.add_compute(HOST, driver=driver)

    stack.wait_for_server_status(server, "ERROR")
    stack.wait(lambda: stack.cinder.get(None, root.volume_id)["status"] == "in-use",
               what="the root volume connected again")
    again, attachments = _root_attachments(stack, server)
    assert attachments == [(root.attachment_id, "attached")]
    assert again.connection_info
    _rebuild(stack, server, image)
    stack.wait_for_server_status(server, "ACTIVE")
    assert _root_bytes(stack, server, len(PATTERN)) == PATTERN
    assert _serials(stack, server) == [root.volume_id]
