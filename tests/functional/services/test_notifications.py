"""Nova's versioned notifications of a boot, an attach, a detach and a swap (fake:// stack).

Every payload the compute hands to its notifier is compared with Nova 34's
published sample of the same event type (``tests/fixtures/nova_samples.py``:
object names and versions at every level, the same fields, compatible
types, null only where Nova's field may be null); the values are checked
against what the API shows of the same server.
"""

import pytest

from tests.fixtures import nova_samples
from volumesvc import exception

TOKEN = "u1:p1"
ADMIN = "admin:admin"


@pytest.fixture(scope="module")
def samples():
    return nova_samples.samples()


def _data(payload):
    return payload["nova_object.data"]


def _checked(stack, samples, event_type):
    """The one notification of ``event_type`` sent so far, checked against Nova's sample."""
    (payload,) = stack.wait(lambda: stack.notifier.of(event_type), what=event_type)
    assert samples.payload_problems(event_type, payload) == []
    return _data(payload)


def _boot(stack):
    _, key, _ = stack.api("POST", "/os-keypairs", {"keypair": {"name": "k1"}},
                          version="2.2", token=TOKEN, status=201)
    _, body, _ = stack.api("POST", "/servers", {"server": {
        "name": "notified", "flavorRef": "42", "networks": "none", "key_name": "k1",
        "tags": ["billing"], "metadata": {"team": "storage"},
        "block_device_mapping_v2": [{"source_type": "blank", "destination_type": "volume",
                                     "boot_index": 0, "volume_size": 1,
                                     "delete_on_termination": True}]}},
        version="2.52", token=TOKEN, status=202)
    server_id = body["server"]["id"]
    stack.wait_for_server_status(server_id, ["ACTIVE"])
    return server_id, key["keypair"]


def test_boot_attach_detach_swap_send_nova_payloads(stack, samples):
    server_id, keypair = _boot(stack)
    start = _checked(stack, samples, "instance.create.start")
    end = _checked(stack, samples, "instance.create.end")
    assert (start["state"], start["power_state"]) == ("building", "pending")
    assert (end["state"], end["power_state"], end["task_state"]) == ("active", "running", None)
    assert end["uuid"] == server_id and end["host"] == "fn-compute"
    assert end["tenant_id"] == "p1" and end["action_initiator_user"] == "u1"
    assert end["launched_at"].endswith("Z") and end["created_at"]
    assert end["tags"] == ["billing"] and end["metadata"] == {"team": "storage"}
    ((root,),) = [[_data(b) for b in end["block_devices"]]]
    assert (root["boot_index"], root["delete_on_termination"]) == (0, True)
    (key,) = [_data(k) for k in end["keypairs"]]
    assert (key["name"], key["fingerprint"], key["type"]) == (
        "k1", keypair["fingerprint"], "ssh")
    assert _data(end["flavor"])["flavorid"] == "42"
    assert end["instance_name"] and end["fault"] is None and end["ip_addresses"] == []

    volume = stack.cinder.create(stack.context(), 1, "data", "")
    stack.attach_volume(server_id, volume["id"], version="2.101", status=202)
    attached = _checked(stack, samples, "instance.volume_attach.end")
    assert _checked(stack, samples, "instance.volume_attach.start")["volume_id"] == volume["id"]
    assert attached["volume_id"] == volume["id"]
    assert [_data(b)["volume_id"] for b in attached["block_devices"]] == [volume["id"]]

    new = stack.cinder.start_migration(volume["id"], size=1)
    stack.api("PUT", f"/servers/{server_id}/os-volume_attachments/{volume['id']}",
              {"volumeAttachment": {"volumeId": new["id"]}}, token=ADMIN, status=202)
    swapped = _checked(stack, samples, "instance.volume_swap.end")
    assert _checked(stack, samples, "instance.volume_swap.start")["new_volume_id"] == new["id"]
    assert (swapped["old_volume_id"], swapped["new_volume_id"]) == (volume["id"], new["id"])

    stack.wait(lambda: stack.server(server_id)["OS-EXT-STS:task_state"] is None,
               what="swap done")
    stack.api("DELETE", f"/servers/{server_id}/os-volume_attachments/{volume['id']}",
              token=TOKEN, status=202)
    detached = _checked(stack, samples, "instance.volume_detach.end")
    assert _checked(stack, samples, "instance.volume_detach.start")["volume_id"] == volume["id"]
    assert detached["volume_id"] == volume["id"]
    assert [_data(b)["volume_id"] for b in detached["block_devices"]] == [volume["id"]]


def test_failures_carry_nova_fault_payloads(stack, samples, server):
    volume = stack.cinder.create(stack.context(), 1, "refused", "")
    stack.cinder.fail_next("attachment_update", exception.Invalid(reason="backend says no"))
    stack.attach_volume(server, volume["id"], version="2.101", status=202)
    error = _checked(stack, samples, "instance.volume_attach.error")
    fault = _data(error["fault"])
    assert fault["exception"] == "Invalid" and "backend says no" in fault["exception_message"]
    assert fault["traceback"].startswith("Traceback") and fault["module_name"]
    assert error["volume_id"] == volume["id"]

    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    stack.computes["fn-compute"].manager.driver.capabilities["supports_multiattach"] = False
    failed = stack.boot(stack.context(), [
        {"source_type": "blank", "destination_type": "volume", "boot_index": 0,
         "volume_size": 1, "volume_type": "multi", "delete_on_termination": True}])
    stack.wait_instance(failed, "error")
    create_error = _checked(stack, samples, "instance.create.error")
    assert create_error["uuid"] == failed and create_error["state"] == "error"
    assert "multiattach" in _data(create_error["fault"])["exception_message"].lower()


def test_the_comparison_reports_what_differs_from_nova_s(stack, samples, server):
    """The check the other tests rely on fails on each kind of difference."""
    import copy

    (payload,) = stack.wait(lambda: stack.notifier.of("instance.create.end"), what="end")
    assert samples.payload_problems("instance.create.end", payload) == []
    changed = copy.deepcopy(payload)
    data = _data(changed)
    data["volume_type"] = "gold"
    del data["keypairs"]
    data["locked"] = "no"
    _data(data["flavor"])["name"] = None
    data["flavor"]["nova_object.version"] = "1.3"
    assert sorted(samples.payload_problems("instance.create.end", changed)) == sorted([
        "payload.flavor: nova_object.version 1.3 != 1.4",
        "payload.flavor.name: null where Nova's field is not nullable",
        "payload.keypairs: missing (InstanceCreatePayload)",
        "payload.locked: str where Nova's is boolean",
        "payload.volume_type: not in Nova's InstanceCreatePayload",
    ])


def test_power_and_delete_notifications_match_nova_s_too(stack, samples, server):
    """Every other instance event the compute sends has Nova's payload for its type."""
    for action, status in (("os-stop", "SHUTOFF"), ("os-start", "ACTIVE")):
        stack.api("POST", f"/servers/{server}/action", {action: None}, token=TOKEN,
                  status=202)
        stack.wait_for_server_status(server, [status])
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.wait_for_server_gone(server)
    stopped = _checked(stack, samples, "instance.power_off.end")
    assert (stopped["state"], stopped["power_state"]) == ("stopped", "shutdown")
    assert _checked(stack, samples, "instance.power_on.end")["power_state"] == "running"
    assert _checked(stack, samples, "instance.delete.end")["state"] == "deleted"
    for event_type in ("instance.power_off.start", "instance.power_on.start",
                       "instance.delete.start"):
        _checked(stack, samples, event_type)


def test_rebuild_and_shelve_notifications_match_nova_s_too(stack, samples, server):
    image = stack.glance.create(stack.context(), name="new", owner="p1", data=b"x" * 512)["id"]
    stack.api("POST", f"/servers/{server}/action", {"rebuild": {"imageRef": image}},
              version="2.93", token=TOKEN, status=202)
    stack.wait(lambda: stack.notifier.of("instance.rebuild.end"), what="rebuild.end")
    stack.wait_for_server_status(server, ["ACTIVE"])
    stack.api("POST", f"/servers/{server}/action", {"shelve": None}, token=TOKEN, status=202)
    stack.wait(lambda: stack.notifier.of("instance.shelve_offload.end"), what="offloaded")
    stack.api("POST", f"/servers/{server}/action", {"unshelve": None}, token=TOKEN,
              status=202)
    stack.wait_for_server_status(server, ["ACTIVE"])
    stack.wait(lambda: stack.notifier.of("instance.unshelve.end"), what="unshelve.end")
    sent = {event_type for event_type, _ in stack.notifier.notifications}
    assert {"instance.rebuild.start", "instance.rebuild.end", "instance.shelve.end",
            "instance.shelve_offload.end", "instance.unshelve.end"} <= sent
    for event_type, payload in stack.notifier.notifications:
        assert samples.payload_problems(event_type, payload) == [], event_type
