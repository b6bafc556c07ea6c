"""What the attachment API leaves behind and exact key sets per microversion.

HTTP journeys (statuses and messages in order) are in the
test_volume_attachments_<action>_*.py modules; these tests look inside the
doubles: exact key sets, the conductor's arguments, BDM rows, Cinder calls
and instance actions.
"""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from volumesvc import context as vs_context
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action

ALICE = {"X-Auth-Token": f"alice:{world.PROJECT}"}
ADMIN = {"X-Auth-Token": "admin:admin-project"}
ACTIVE = world.SERVER["ACTIVE"]
V = world.VOLUME


@pytest.fixture
def api():
    with fixtures.open_world(world) as (app, deps):
        yield app.test_client(), deps


def _call(client, method, path, version, body=None, headers=ALICE):
    return client.open(f"/v2.1/servers/{path}", method=method, json=body,
                       headers={**headers, "OpenStack-API-Version": f"compute {version}"})


def _attachment(deps, server, volume):
    return bdm_obj.get_by_volume_and_instance(deps.db, vs_context.get_admin_context(),
                                              volume, server)


KEYS_2_1 = {"id", "volumeId", "serverId", "device"}
KEYS = {
    "2.1": KEYS_2_1, "2.69": KEYS_2_1,
    "2.70": KEYS_2_1 | {"tag"}, "2.78": KEYS_2_1 | {"tag"},
    "2.79": KEYS_2_1 | {"tag", "delete_on_termination"},
    "2.88": KEYS_2_1 | {"tag", "delete_on_termination"},
    "2.89": {"volumeId", "serverId", "device", "tag", "delete_on_termination",
             "attachment_id", "bdm_uuid"},
    "2.104": {"volumeId", "serverId", "device", "tag", "delete_on_termination",
              "attachment_id", "bdm_uuid"},
}


@pytest.mark.parametrize("version", sorted(KEYS, key=lambda v: int(v.split(".")[1])))
def test_list_and_show_exact_keys(api, version):
    client, deps = api
    resp = _call(client, "GET", f"{ACTIVE}/os-volume_attachments", version)
    assert resp.status_code == 200, resp.json
    items = resp.json["volumeAttachments"]
    # Local disks never; legacy (no attachment_id) BDMs only before 2.89.
    expected = [V["ROOT"], V["DATA"], V["LEGACY"], V["MIGRATING"], V["SHARED"]]
    if version in ("2.89", "2.104"):
        expected.remove(V["LEGACY"])
    assert [item["volumeId"] for item in items] == expected
    assert all(set(item) == KEYS[version] for item in items)
    shown = _call(client, "GET", f"{ACTIVE}/os-volume_attachments/{V['DATA']}",
                  version).json["volumeAttachment"]
    assert set(shown) == KEYS[version]
    bdm = _attachment(deps, ACTIVE, V["DATA"])
    assert shown["volumeId"] == V["DATA"] and shown["serverId"] == ACTIVE
    assert shown["device"] == "/dev/vdb"
    if "tag" in shown:
        assert shown["tag"] == "data"
    if "attachment_id" in shown:
        assert (shown["attachment_id"], shown["bdm_uuid"]) == (bdm.attachment_id, bdm.uuid)
        assert shown["attachment_id"] in deps.cinder.attachments
    if "id" in shown:
        assert shown["id"] == V["DATA"]


def test_device_left_out_when_the_bdm_has_none(api):
    client, deps = api
    bdm = _attachment(deps, ACTIVE, V["DATA"])
    bdm_obj.save(deps.db, vs_context.get_admin_context(), bdm.uuid, {"device_name": None})
    shown = _call(client, "GET", f"{ACTIVE}/os-volume_attachments/{V['DATA']}",
                  "2.1").json["volumeAttachment"]
    assert set(shown) == {"id", "volumeId", "serverId"}


def test_list_pagination_cuts_all_bdms_like_nova(api):
    client, _deps = api
    path = f"{ACTIVE}/os-volume_attachments"
    # The local swap disk is the first BDM: it takes a place on the page.
    page = _call(client, "GET", path + "?limit=2", "2.1").json["volumeAttachments"]
    assert [a["volumeId"] for a in page] == [V["ROOT"]]
    page = _call(client, "GET", path + "?limit=2&offset=2", "2.1").json["volumeAttachments"]
    assert [a["volumeId"] for a in page] == [V["DATA"], V["LEGACY"]]
    everything = _call(client, "GET", path + "?limit=0", "2.1").json["volumeAttachments"]
    assert len(everything) == 5
    assert _call(client, "GET", path + "?foo=1", "2.74").status_code == 200
    assert _call(client, "GET", path + "?foo=1", "2.75").status_code == 400
    assert _call(client, "GET", path + "?limit=-1", "2.1").status_code == 400


CREATED = {
    "2.1": {"id", "serverId", "volumeId", "device"},
    "2.70": {"id", "serverId", "volumeId", "device", "tag"},
    "2.79": {"id", "serverId", "volumeId", "device", "tag", "delete_on_termination"},
    "2.89": {"id", "serverId", "volumeId", "device", "tag", "delete_on_termination"},
    "2.100": {"id", "serverId", "volumeId", "device", "tag", "delete_on_termination"},
}


@pytest.mark.parametrize("version", list(CREATED))
def test_attach_call_below_2_101(api, version):
    client, deps = api
    body = {"volumeAttachment": {"volumeId": V["FREE"], "device": "/dev/vdq"}}
    if version != "2.1":
        body["volumeAttachment"]["tag"] = "t1"
    if version not in ("2.1", "2.70"):
        body["volumeAttachment"]["delete_on_termination"] = "yes"
    resp = _call(client, "POST", f"{ACTIVE}/os-volume_attachments", version, body)
    assert resp.status_code == 200, resp.json
    created = resp.json["volumeAttachment"]
    assert set(created) == CREATED[version]
    # The device the conductor reserved, not the hint.
    assert created["device"] == "/dev/vdf"
    (call,) = deps.conductor.calls
    assert call == ("attach_volume", {
        "instance_uuid": ACTIVE, "volume_id": V["FREE"], "device": "/dev/vdq",
        "disk_bus": None, "device_type": None, "tag": body["volumeAttachment"].get("tag"),
        "delete_on_termination": version not in ("2.1", "2.70"), "multiattach": False,
        "wait": True, "read_only": False})
    bdm = _attachment(deps, ACTIVE, V["FREE"])
    assert created["id"] == created["volumeId"] == V["FREE"]
    assert created.get("delete_on_termination", False) is bdm.delete_on_termination
    assert created.get("tag") == bdm.tag
    # The API itself records no action: the conductor does, after reserving.
    actions = instance_action.list_actions(deps.db, vs_context.get_admin_context(), ACTIVE)
    assert actions == []


def test_attach_cast_from_2_101(api):
    client, deps = api
    resp = _call(client, "POST", f"{ACTIVE}/os-volume_attachments", "2.101",
                 {"volumeAttachment": {"volumeId": V["FREE"], "tag": "x",
                                       "delete_on_termination": True}})
    assert resp.status_code == 202
    assert resp.data == b""
    assert resp.headers["Content-Length"] == "0"
    assert not resp.headers.get("Content-Type", "").startswith("application/json")
    assert resp.headers["OpenStack-API-Version"] == "compute 2.101"
    assert resp.headers["X-OpenStack-Nova-API-Version"] == "2.101"
    assert set(resp.headers.getlist("Vary")) == {"OpenStack-API-Version",
                                                 "X-OpenStack-Nova-API-Version"}
    (call,) = deps.conductor.calls
    assert call[1]["wait"] is False and call[1]["tag"] == "x"
    assert call[1]["delete_on_termination"] is True


@pytest.mark.parametrize(("volume", "status", "fault"), [
    ("TOO_MANY", 403, "forbidden"),
    ("DEVICE_BUSY", 409, "conflictingRequest"),
    ("NO_TAGS", 400, "badRequest"),
])
def test_conductor_refusals_below_2_101(api, volume, status, fault):
    client, deps = api
    resp = _call(client, "POST", f"{ACTIVE}/os-volume_attachments", "2.100",
                 {"volumeAttachment": {"volumeId": V[volume]}})
    assert resp.status_code == status, resp.json
    assert resp.json[fault]["message"] == world.CONDUCTOR_FAILURES[V[volume]]().message
    # From 2.101 the same request is accepted: the failure is only logged.
    resp = _call(client, "POST", f"{ACTIVE}/os-volume_attachments", "2.101",
                 {"volumeAttachment": {"volumeId": V[volume]}})
    assert resp.status_code == 202


def test_update_flag_at_2_85(api):
    client, deps = api
    path = f"{ACTIVE}/os-volume_attachments/{V['DATA']}"
    resp = _call(client, "PUT", path, "2.85", {"volumeAttachment": {
        "volumeId": V["DATA"], "id": V["DATA"], "serverId": ACTIVE, "device": "/dev/vdb",
        "tag": "data", "delete_on_termination": True}})
    assert resp.status_code == 202 and resp.data == b""
    assert _attachment(deps, ACTIVE, V["DATA"]).delete_on_termination is True
    for key, value in (("device", "/dev/vdx"), ("tag", "other"), ("serverId", V["FREE"]),
                       ("id", V["FREE"])):
        resp = _call(client, "PUT", path, "2.85", {"volumeAttachment": {
            "volumeId": V["DATA"], key: value, "delete_on_termination": False}})
        assert resp.status_code == 400
        assert resp.json["badRequest"]["message"] == f"The {key} property is not mutable"
    # Refused requests changed nothing.
    assert _attachment(deps, ACTIVE, V["DATA"]).delete_on_termination is True


def test_a_2_85_swap_updates_the_flag_first_then_casts(api):
    client, deps = api
    path = f"{ACTIVE}/os-volume_attachments/{V['MIGRATING']}"
    resp = _call(client, "PUT", path, "2.85", {"volumeAttachment": {
        "volumeId": V["FREE"], "delete_on_termination": True}}, headers=ADMIN)
    assert resp.status_code == 202 and resp.data == b""
    assert _attachment(deps, ACTIVE, V["MIGRATING"]).delete_on_termination is True
    assert deps.conductor.calls == [("swap_volume", {
        "instance_uuid": ACTIVE, "old_volume_id": V["MIGRATING"],
        "new_volume_id": V["FREE"]})]


def test_a_swap_takes_the_task_and_casts():
    with fixtures.open_world(fixtures.VolumeAttachmentsProgressWorld) as (app, deps):
        client = app.test_client()
        path = f"{ACTIVE}/os-volume_attachments/{V['MIGRATING']}"
        resp = _call(client, "PUT", path, "2.1", {"volumeAttachment": {
            "volumeId": V["FREE"]}}, headers=ADMIN)
        assert resp.status_code == 202 and resp.data == b""
        assert deps.conductor.calls == [("swap_volume", {
            "instance_uuid": ACTIVE, "old_volume_id": V["MIGRATING"],
            "new_volume_id": V["FREE"]})]
        ctx = vs_context.get_admin_context()
        assert instance_obj.get_by_uuid(deps.db, ctx, ACTIVE).task_state == "swapping_volume"
        actions = instance_action.list_actions(deps.db, ctx, ACTIVE)
        assert [a.action for a in actions] == ["swap_volume"]
        # A second swap (or any other task) waits for this one: 409, nothing cast.
        resp = _call(client, "PUT", path, "2.1", {"volumeAttachment": {
            "volumeId": V["FREE2"]}}, headers=ADMIN)
        assert resp.status_code == 409
        assert "task_state swapping_volume" in resp.json["conflictingRequest"]["message"]
        assert len(deps.conductor.calls) == 1


def test_detach_records_the_action_and_casts(api):
    client, deps = api
    resp = _call(client, "DELETE", f"{ACTIVE}/os-volume_attachments/{V['DATA']}", "2.1")
    assert resp.status_code == 202 and resp.data == b""
    bdm = _attachment(deps, ACTIVE, V["DATA"])
    assert deps.conductor.calls == [("detach_volume", {
        "instance_uuid": ACTIVE, "volume_id": V["DATA"], "attachment_id": bdm.attachment_id})]
    assert deps.cinder.volumes[V["DATA"]]["status"] == "detaching"
    actions = instance_action.list_actions(deps.db, vs_context.get_admin_context(), ACTIVE)
    assert [a.action for a in actions] == ["detach_volume"]


def test_detach_of_a_legacy_bdm_takes_the_attachment_from_cinder(api):
    client, deps = api
    resp = _call(client, "DELETE", f"{ACTIVE}/os-volume_attachments/{V['LEGACY']}", "2.1")
    assert resp.status_code == 202
    (entry,) = [e for e in deps.cinder.get(None, V["LEGACY"])["attachments"]
                if e["server_id"] == ACTIVE]
    assert deps.conductor.calls[-1][1]["attachment_id"] == entry["attachment_id"]


class _DownConductor(world.AttachConductor):
    def detach_volume(self, ctxt, **kwargs):
        raise RuntimeError("bus down")


def test_detach_rolls_back_begin_detaching_when_the_cast_fails(api):
    client, deps = api
    deps._given["conductor"] = _DownConductor(deps.conf, deps.db, deps.cinder)
    resp = _call(client, "DELETE", f"{ACTIVE}/os-volume_attachments/{V['DATA']}", "2.1")
    assert resp.status_code == 500
    assert deps.cinder.volumes[V["DATA"]]["status"] == "in-use"
