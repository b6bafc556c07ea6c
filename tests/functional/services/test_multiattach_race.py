"""Two attaches of one volume sent at the same moment (threads started together).

The fake Cinder refuses a reservation while the volume is ``reserved`` or
``attaching``, as Cinder 29 does, and its ``attachment_update`` is slowed
down here so the first attach holds the volume ``attaching`` long enough
that the second one certainly hits it. A multiattach volume must end up
attached to both servers (the conductor retries); a single-attach volume
to exactly one, the other refused (400 at 2.100, an Error event at 2.101),
with nothing left ``reserved`` and no BDM without a Cinder attachment.
"""

import functools
import json
import threading
import time

import pytest

from tests.fixtures.together import run_together
from tests.functional.stack import Stack
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance_action as action_obj

TOKEN = "u1:p1"


@pytest.fixture
def race(tmp_path):
    stack = Stack(tmp_path, conf_overrides={("cinder", "attachment_reserve_interval"): 0.1})
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    update = stack.cinder.attachment_update

    def slow_update(*args, **kwargs):
        time.sleep(0.4)  # a slow storage backend: the volume stays "attaching"
        return update(*args, **kwargs)

    stack.cinder.attachment_update = slow_update
    yield stack, stack.boot_active(2)
    stack.stop()


def _attach_together(stack, servers, volume_id, version):
    """POST the attach for every server at once; [(status, body)] in server order."""
    def attach(client, server_id):
        resp = client.post(
            f"/v2.1/servers/{server_id}/os-volume_attachments",
            json={"volumeAttachment": {"volumeId": volume_id}},
            headers={"X-Auth-Token": TOKEN, "OpenStack-API-Version": f"compute {version}"})
        return resp.status_code, json.loads(resp.data) if resp.data else None

    return run_together([functools.partial(attach, stack.app.test_client(), server_id)
                         for server_id in servers])


def _refusals(stack, volume_id):
    """How many reservations of the volume Cinder refused (calls minus attachments made)."""
    tries = [c for c in stack.cinder.calls
             if c[0] == "attachment_create" and c[1][0] == volume_id]
    made = [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume_id]
    return len(tries) - len(made)


def _volume_bdms(stack, volume_id):
    return bdm_obj.list_by_volume(stack.db, stack.admin_context(), volume_id)


def _settled(stack, volume_id, status):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == status,
               timeout=30, what=f"volume {volume_id} {status}")


@pytest.mark.parametrize("version,expected", [("2.60", 200), ("2.101", 202)])
def test_a_multiattach_volume_ends_attached_to_both(race, version, expected):
    stack, servers = race
    volume_id = stack.cinder.create(stack.context(), 1, "shared", "",
                                    volume_type="multi")["id"]
    results = _attach_together(stack, servers, volume_id, version)
    assert [status for status, _ in results] == [expected, expected], results
    stack.wait(lambda: len([a for a in stack.cinder.attachments.values()
                            if a["volume_id"] == volume_id and a["status"] == "attached"]) == 2,
               timeout=30, what="both attachments attached")
    _settled(stack, volume_id, "in-use")
    assert _refusals(stack, volume_id) >= 1  # the race really happened
    bdms = _volume_bdms(stack, volume_id)
    assert sorted(b.instance_uuid for b in bdms) == sorted(servers)
    volume = stack.cinder.get(None, volume_id)
    assert {b.attachment_id for b in bdms} == {a["attachment_id"] for a in volume["attachments"]}
    driver = stack.computes["fn-compute"].manager.driver
    for server_id in servers:
        xml = driver.get_domain_xml({"uuid": server_id})
        assert "<shareable" in xml and f"<serial>{volume_id}</serial>" in xml


def test_a_single_attach_volume_ends_on_one_server_the_other_gets_400(race):
    stack, servers = race
    volume_id = stack.cinder.create(stack.context(), 1, "single", "")["id"]
    results = _attach_together(stack, servers, volume_id, "2.100")
    statuses = sorted(status for status, _ in results)
    assert statuses == [200, 400], results
    (refused,) = [body for status, body in results if status == 400]
    assert "reserve" in refused["badRequest"]["message"] or \
        "already attached" in refused["badRequest"]["message"]
    _settled(stack, volume_id, "in-use")
    (bdm,) = _volume_bdms(stack, volume_id)
    (entry,) = stack.cinder.get(None, volume_id)["attachments"]
    assert entry["attachment_id"] == bdm.attachment_id


def test_a_single_attach_volume_at_2_101_leaves_an_error_event_for_the_loser(race):
    stack, servers = race
    volume_id = stack.cinder.create(stack.context(), 1, "single", "")["id"]
    results = _attach_together(stack, servers, volume_id, "2.101")
    assert [status for status, _ in results] == [202, 202], results
    _settled(stack, volume_id, "in-use")
    stack.wait(lambda: len(_volume_bdms(stack, volume_id)) == 1, timeout=30,
               what="the losing BDM rolled back")
    (bdm,) = _volume_bdms(stack, volume_id)
    (loser,) = [s for s in servers if s != bdm.instance_uuid]
    ctx = stack.admin_context()

    def error_event():
        for action in action_obj.list_actions(stack.db, ctx, loser):
            if action.action != "attach_volume":
                continue
            events = action_obj.get_action(stack.db, ctx, loser, action.request_id).events
            return [e for e in events if e.result == "Error"]
        return None
    (event,) = stack.wait(error_event, timeout=30, what="an Error event for the loser")
    assert volume_id in (event.details or "")
    (entry,) = stack.cinder.get(None, volume_id)["attachments"]
    assert entry["attachment_id"] == bdm.attachment_id
    assert not [a for a in stack.cinder.attachments.values()
                if a["volume_id"] == volume_id and a["status"] == "reserved"]


def test_a_boot_from_a_multiattach_root_waits_for_another_servers_attach(race):
    stack, (other, _second) = race
    volume_id = stack.cinder.create(stack.context(), 1, "root", "",
                                    volume_type="multi")["id"]
    stack.cinder.volumes[volume_id]["bootable"] = "true"
    # Another server's attach is half way: the volume is "attaching".
    held = stack.cinder.attachment_create(None, volume_id, other)
    stack.cinder.attachment_update(None, held["id"], {"host": "fn-compute"}, "/dev/vdb")
    finisher = threading.Timer(0.5, stack.cinder.attachment_complete, (None, held["id"]))
    finisher.start()
    try:
        _, body, _ = stack.api("POST", "/servers", {"server": {
            "name": "bfv", "flavorRef": "42", "networks": "none",
            "block_device_mapping_v2": [{"source_type": "volume", "uuid": volume_id,
                                         "destination_type": "volume", "boot_index": 0}]}},
            version="2.60", token=TOKEN, status=202)
    finally:
        finisher.join()
    assert _refusals(stack, volume_id) >= 1
    stack.wait_for_server_status(body["server"]["id"], "ACTIVE", timeout=30)
    _settled(stack, volume_id, "in-use")
    assert len(stack.cinder.get(None, volume_id)["attachments"]) == 2
