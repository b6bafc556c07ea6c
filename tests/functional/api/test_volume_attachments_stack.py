"""os-volume_attachments over the whole service (API + conductor + compute, fake://).

The journeys on VolumeAttachmentsWorld use a conductor double; these run the real attach task,
the compute's device reservation and the fake libvirt, so the 200 body's
device, the 2.89 attachment_id and the 2.101 cast are what the real
workflow produces.
"""

import socket

import pytest

from tests.functional.stack import BLANK_ROOT as ROOT
from tests.functional.stack import Stack
from volumesvc.api.deps import Deps
from volumesvc.serving.app import create_app
from volumesvc.volume.cinder import CinderAPI

TOKEN = "u1:p1"


@pytest.fixture
def server(stack):
    uuid = stack.boot(stack.context(), ROOT)
    stack.wait_instance(uuid, "active")
    return uuid


def _status(stack, volume_id, status):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == status,
               what=f"volume {volume_id} {status}")


def _path(server, volume_id=None):
    path = f"/servers/{server}/os-volume_attachments"
    return f"{path}/{volume_id}" if volume_id else path


def test_attach_below_2_101_answers_with_the_reserved_device(stack, server):
    volume = stack.cinder.create(stack.context(), 1, "data", "")
    _, body, _ = stack.api("POST", _path(server), {"volumeAttachment": {
        "volumeId": volume["id"], "device": "/dev/vdq", "tag": "t1",
        "delete_on_termination": True}}, version="2.100", token=TOKEN, status=200)
    assert body["volumeAttachment"] == {
        "id": volume["id"], "serverId": server, "volumeId": volume["id"],
        "device": "/dev/sdb", "tag": "t1", "delete_on_termination": True}
    _status(stack, volume["id"], "in-use")
    _, shown, _ = stack.api("GET", _path(server, volume["id"]), version="2.89",
                            token=TOKEN, status=200)
    (entry,) = stack.cinder.get(None, volume["id"])["attachments"]
    assert shown["volumeAttachment"]["attachment_id"] == entry["attachment_id"]
    _, actions, _ = stack.api("GET", f"/servers/{server}/os-instance-actions", token=TOKEN,
                              status=200)
    assert actions["instanceActions"][0]["action"] == "attach_volume"


def test_attach_from_2_101_is_a_cast_and_detach_completes(stack, server):
    volume = stack.cinder.create(stack.context(), 1, "data", "")
    status, body, headers = stack.api("POST", _path(server), {"volumeAttachment": {
        "volumeId": volume["id"]}}, version="2.101", token=TOKEN)
    assert (status, body, headers["Content-Length"]) == (202, None, "0")
    assert headers["OpenStack-API-Version"] == "compute 2.101"
    _status(stack, volume["id"], "in-use")
    _, listed, _ = stack.api("GET", _path(server), version="2.101", token=TOKEN, status=200)
    assert [a["volumeId"] for a in listed["volumeAttachments"]][-1] == volume["id"]

    stack.api("DELETE", _path(server, volume["id"]), version="2.101", token=TOKEN,
              status=202)
    _status(stack, volume["id"], "available")
    stack.wait(lambda: stack.api("GET", _path(server, volume["id"]), token=TOKEN)[0] == 404,
               what="attachment gone")


def test_conductor_refusal_is_an_error_below_2_101_and_logged_from_2_101(stack, server):
    stack.computes["fn-compute"].manager.driver.capabilities[
        "supports_tagged_attach_volume"] = False
    # The conductor reads the capabilities off the compute's service record.
    stack.computes["fn-compute"].report_state()
    volume = stack.cinder.create(stack.context(), 1, "data", "")
    body = {"volumeAttachment": {"volumeId": volume["id"], "tag": "x"}}
    _, fault, _ = stack.api("POST", _path(server), body, version="2.100", token=TOKEN,
                            status=400)
    assert fault["badRequest"]["message"] == (
        "Tagged volume attachment is not supported for this instance's compute host.")
    _, _, headers = stack.api("POST", _path(server), body, version="2.101", token=TOKEN,
                              status=202)
    # The reason is in the instance action once the cast has run, and nothing
    # is left behind. (Regression: this waited for "no attachment", true
    # before the cast ran, and the stack stopped under a running attach.)
    action = f"/servers/{server}/os-instance-actions/{headers['X-OpenStack-Request-Id']}"

    def finished_events():
        status, shown, _ = stack.api("GET", action, version="2.84", token=TOKEN)
        events = shown["instanceAction"]["events"] if status == 200 else []
        return events if events and all(e["finish_time"] for e in events) else None

    (event,) = stack.wait(finished_events, what="the attach action's event finished")
    assert event["result"] == "Error", event
    assert "Tagged volume attachment is not supported" in event["details"], event
    assert not [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume["id"]]
    assert stack.cinder.get(None, volume["id"])["status"] == "available"


def test_root_volume_cannot_be_detached(stack, server):
    _, listed, _ = stack.api("GET", _path(server), token=TOKEN, status=200)
    (root,) = listed["volumeAttachments"]
    _, fault, _ = stack.api("DELETE", _path(server, root["volumeId"]), token=TOKEN,
                            status=400)
    assert fault["badRequest"]["message"] == "Cannot detach a root device volume"


def test_blocking_attach_to_a_conductor_that_stopped_answering_is_a_503(tmp_path):
    """Regression: the RPC timeout of the blocking attach was a 500."""
    stack = Stack(tmp_path, conf_overrides={(None, "long_rpc_timeout"): 2,
                                            (None, "rpc_response_timeout"): 2})
    try:
        server = stack.boot(stack.context(), ROOT)
        stack.wait_instance(server, "active")
        volume = stack.cinder.create(stack.context(), 1, "data", "")
        stack.conductor.stop()
        _, fault, _ = stack.api("POST", _path(server), {"volumeAttachment": {
            "volumeId": volume["id"]}}, version="2.100", token=TOKEN, status=503)
        assert fault == {"serviceUnavailable": {"code": 503, "message": (
            "volumesvc-conductor did not answer in time. The attach may still complete or "
            f"be rolled back; check GET /servers/{server}/os-volume_attachments before "
            "retrying.")}}
        assert stack.cinder.get(None, volume["id"])["status"] == "available"
    finally:
        stack.stop()


def test_attach_while_cinder_is_unreachable_is_a_503(stack, server):
    """Regression: a Cinder that refuses connections gave a 500 (unmapped exception)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    conf = stack.conf
    conf.set_override("auth_strategy", "noauth", group="cinder")
    conf.set_override("endpoint_override", f"http://127.0.0.1:{closed_port}/v3", group="cinder")
    conf.set_override("http_retries", 0, group="cinder")
    client = create_app(conf, deps=Deps(conf, db=stack.db, conductor=stack.conductor_api(),
                                        cinder=CinderAPI(conf), glance=stack.glance)).test_client()
    resp = client.post(f"/v2.1{_path(server)}", json={"volumeAttachment": {
        "volumeId": "6bb4c0a4-8f39-4fd5-9b43-4ab6d0e4c1b6"}}, headers={
        "X-Auth-Token": TOKEN, "OpenStack-API-Version": "compute 2.101"})
    assert resp.status_code == 503, resp.json
    message = resp.json["serviceUnavailable"]["message"]
    assert message.startswith("Connection to cinder host failed"), message
