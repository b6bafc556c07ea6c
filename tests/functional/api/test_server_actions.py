"""POST /servers/{id}/action through the real app: every contract §2 rule for reboot, createImage.

The journeys (test_actions_*.py) read like a user's session;
these tests walk the whole state grid and look inside the fakes (conductor
casts, Cinder snapshots, the Glance image's properties).
"""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServerActionsWorld as world
from tests.functional.api.server_helpers import (
    ADMIN,
    TASK_STATES,
    VM_STATES,
    post_action,
    race_task_state,
    server_uuid,
    set_state,
)
from volumesvc import context as vs_context
from volumesvc.api.logic import states
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj


@pytest.fixture
def env():
    with fixtures.open_world(world) as (app, deps):
        yield app.test_client(), deps





def _allowed(gate, vm_state, task_state):
    return vm_state in gate.vm_states and task_state in gate.task_states


@pytest.mark.parametrize("reboot_type", ["SOFT", "HARD"])
def test_reboot_state_grid(env, reboot_type):
    client, deps = env
    gate = states.REBOOT_SOFT if reboot_type == "SOFT" else states.REBOOT_HARD
    uuid = server_uuid("ACTIVE")
    for vm_state in VM_STATES:
        for task_state in TASK_STATES:
            set_state(deps, "ACTIVE", vm_state, task_state)
            response = post_action(client, "ACTIVE", {"reboot": {"type": reboot_type}})
            if _allowed(gate, vm_state, task_state):
                assert response.status_code == 202, (vm_state, task_state, response.json)
                assert response.data == b""
                saved = instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(), uuid)
                assert saved.task_state == ("rebooting" if reboot_type == "SOFT"
                                            else "rebooting_hard")
                assert deps.conductor.casts[-1] == ("reboot_instance", {
                    "instance_uuid": uuid, "reboot_type": reboot_type})
            else:
                assert response.status_code == 409, (vm_state, task_state)
                attr, state = (("vm_state", vm_state) if vm_state not in gate.vm_states
                               else ("task_state", task_state))
                assert response.json == {"conflictingRequest": {
                    "code": 409, "message":
                    f"Cannot 'reboot' instance {uuid} while it is in {attr} {state}"}}


def test_reboot_records_action_and_casts(env):
    client, deps = env
    response = post_action(client, "STOPPED", {"reboot": {"type": "hard"}})
    assert response.status_code == 202
    actions = action_obj.list_actions(deps.db, vs_context.get_admin_context(),
                                      server_uuid("STOPPED"))
    assert [a.action for a in actions] == ["reboot"]
    assert actions[0].request_id == response.headers["x-openstack-request-id"]
    assert deps.conductor.casts == [("reboot_instance", {
        "instance_uuid": server_uuid("STOPPED"), "reboot_type": "HARD"})]


@pytest.mark.parametrize("spelling", ["SOFT", "Soft", "soft"])
def test_reboot_spellings(env, spelling):
    client, deps = env
    assert post_action(client, "ACTIVE", {"reboot": {"type": spelling}}).status_code == 202
    assert deps.conductor.casts[-1][1]["reboot_type"] == "SOFT"


def test_reboot_lock(env):
    client, deps = env
    response = post_action(client, "LOCKED", {"reboot": {"type": "SOFT"}})
    assert response.status_code == 409
    assert response.json["conflictingRequest"]["message"] == \
        f"Instance {server_uuid('LOCKED')} is locked"
    # The lock is checked before the state.
    response = post_action(client, "LOCKED_STOPPED", {"reboot": {"type": "SOFT"}})
    assert "is locked" in response.json["conflictingRequest"]["message"]
    assert post_action(client, "LOCKED", {"reboot": {"type": "SOFT"}}, ADMIN).status_code == 202
    assert deps.conductor.casts[-1][1]["instance_uuid"] == server_uuid("LOCKED")


def test_reboot_not_launched(env):
    client, _ = env
    response = post_action(client, "NOT_LAUNCHED", {"reboot": {"type": "HARD"}})
    assert response.status_code == 409
    assert response.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('NOT_LAUNCHED')} while it is in launched_at None")


def test_reboot_404s(env):
    client, deps = env
    for target in ("OTHER_PROJECT", "DELETED", "5e4e0000-0000-4000-8000-0000000000ff",
                   "not-a-uuid"):
        response = post_action(client, target, {"reboot": {"type": "SOFT"}})
        assert response.status_code == 404, target
        assert "itemNotFound" in response.json
    assert deps.conductor.casts == []


def test_concurrent_reboot_loses_the_compare_and_swap(env, monkeypatch):
    """Another request sets task_state between our check and our write: 409."""
    client, deps = env
    race_task_state(monkeypatch)
    response = post_action(client, "ACTIVE", {"reboot": {"type": "SOFT"}})
    assert response.status_code == 409
    assert response.json["conflictingRequest"]["message"].endswith("task_state deleting")
    assert deps.conductor.casts == []


@pytest.mark.parametrize("body,message", [
    ({"reboot": {"type": "WARM"}}, None),
    ({"reboot": {}}, None),
    ({"reboot": {"type": "SOFT", "force": True}}, None),
    ({"reboot": {"type": "SOFT"}, "createImage": {"name": "x"}}, None),
    ({}, None),
    ({"os-reboot": {"type": "SOFT"}}, "There is no such action: os-reboot"),
    ({"pause": None}, "The 'pause' server action is not supported by this service."),
    ({"changePassword": {"adminPass": "x"}},
     "The 'changePassword' server action is not supported by this service."),
], ids=lambda value: None if isinstance(value, dict) else "msg")
def test_bad_bodies(env, body, message):
    client, _ = env
    response = post_action(client, "ACTIVE", body)
    assert response.status_code == 400, response.json
    if message:
        assert response.json["badRequest"]["message"] == message


# --- createImage ---------------------------------------------------------------------

def _image(deps, image_id):
    return deps.glance.get(vs_context.get_admin_context(), image_id)


def test_create_image_2_45_body_and_properties(env):
    client, deps = env
    response = post_action(client, "ACTIVE", {"createImage": {"name": "snap", "metadata": {
        "purpose": "backup"}}}, version="2.45")
    assert response.status_code == 202
    image = _image(deps, response.json["image_id"])
    assert "Location" not in response.headers
    assert (image["status"], image["size"], image["owner"]) == ("active", 0, "demo-project")
    assert (image["disk_format"], image["container_format"]) == ("raw", "bare")
    props = image["properties"]
    assert props["bdm_v2"] == "True"
    assert props["root_device_name"] == "/dev/vda"
    assert props["purpose"] == "backup"
    assert props["image_type"] == "snapshot"
    mapping = world.image_mapping(image)
    # Local disks first, then one snapshot entry per volume, in BDM order.
    assert [m["source_type"] for m in mapping] == ["blank", "snapshot", "snapshot"]
    assert mapping[0]["guest_format"] == "swap"
    swap, root, data = mapping
    keys = set(root)
    assert keys == set(swap)
    assert {"volume_type", "encrypted", "encryption_secret_uuid", "encryption_format",
            "encryption_options", "tag", "no_device", "image_id", "volume_id",
            "guest_format"} <= keys
    assert root["volume_type"] == "fast" and data["volume_type"] == "slow"
    assert (root["boot_index"], root["device_name"], root["delete_on_termination"]) == \
        (0, "/dev/vda", True)
    assert root["destination_type"] == "volume" and root["volume_id"] is None
    snapshots = deps.cinder.snapshots
    assert {root["snapshot_id"], data["snapshot_id"]} <= set(snapshots)
    assert snapshots[root["snapshot_id"]]["volume_id"] == world.VOL_ROOT
    assert snapshots[root["snapshot_id"]]["name"] == "snapshot for snap"
    # Action and event recorded.
    action = action_obj.get_action(deps.db, vs_context.get_admin_context(), server_uuid("ACTIVE"),
                                   response.headers["x-openstack-request-id"])
    assert action.action == "createImage"
    assert [(e.event, e.result) for e in action.events] == [("api_snapshot_instance",
                                                             "Success")]


def test_create_image_2_1_location(env):
    client, deps = env
    response = post_action(client, "STOPPED", {"createImage": {"name": "snap"}})
    assert response.status_code == 202
    assert response.data == b""
    location = response.headers["Location"]
    assert location.startswith("http://glance.example.test:9292/images/")
    image = _image(deps, location.rsplit("/", 1)[1])
    assert world.image_mapping(image)[0]["volume_type"] == "fast"


@pytest.mark.parametrize("name", ["ACTIVE", "STOPPED", "PAUSED", "SUSPENDED", "LOCKED"])
def test_create_image_allowed_states(env, name):
    client, _ = env
    assert post_action(client, name, {"createImage": {"name": "s"}}, version="2.45").status_code \
        == 202


@pytest.mark.parametrize("name,attr,state", [
    ("ERROR", "vm_state", "error"), ("RESCUED", "vm_state", "rescued"),
    ("SHELVED", "vm_state", "shelved"), ("RESIZED", "vm_state", "resized"),
    ("REBOOTING", "task_state", "rebooting"), ("PAUSING", "task_state", "pausing"),
    ("SNAPSHOTTING", "task_state", "image_snapshot"),
    ("NOT_LAUNCHED", "launched_at", "None"),
])
def test_create_image_refused_states(env, name, attr, state):
    client, deps = env
    response = post_action(client, name, {"createImage": {"name": "s"}})
    assert response.status_code == 409
    assert response.json["conflictingRequest"]["message"] == \
        f"Cannot 'createImage' instance {server_uuid(name)} while it is in {attr} {state}"
    assert deps.cinder.snapshots == {} and deps.glance.images == {}


def test_create_image_snapshot_quota(env):
    client, deps = env
    response = post_action(client, "OVER_QUOTA", {"createImage": {"name": "s"}})
    assert response.status_code == 403
    assert response.json == {"forbidden": {
        "code": 403, "message": "Quota exceeded for resources: snapshots"}}
    # Checked up front: nothing was created, no action recorded.
    assert deps.cinder.snapshots == {} and deps.glance.images == {}
    assert action_obj.list_actions(deps.db, vs_context.get_admin_context(),
                                   server_uuid("OVER_QUOTA")) == []


def test_create_image_policy(env):
    client, deps = env
    from oslo_policy import policy as oslo_policy

    deps.enforcer.load_rules()
    deps.enforcer.set_rules(oslo_policy.Rules.from_dict(
        {"os_compute_api:servers:create_image:allow_volume_backed": "!"}), overwrite=False)
    response = post_action(client, "ACTIVE", {"createImage": {"name": "s"}})
    assert response.status_code == 403
    assert "allow_volume_backed" in response.json["forbidden"]["message"]


def test_create_image_image_backed_is_400(env):
    client, _ = env
    response = post_action(client, "IMAGE_BACKED", {"createImage": {"name": "s"}})
    assert response.status_code == 400
    assert "does not boot from a volume" in response.json["badRequest"]["message"]


@pytest.mark.parametrize("body", [
    {"createImage": {}},
    {"createImage": {"name": ""}},
    {"createImage": {"name": " lead"}},
    {"createImage": {"name": "x" * 256}},
    {"createImage": {"name": "x", "metadata": {"k": 1}}},
    {"createImage": {"name": "x", "extra": 1}},
])
def test_create_image_bad_input(env, body):
    client, _ = env
    assert post_action(client, "ACTIVE", body).status_code == 400


def test_create_image_response_schema_at_2_44_and_2_45(env):
    client, _ = env
    assert post_action(client, "ACTIVE", {"createImage": {"name": "s"}},
                       version="2.44").data == b""
    assert set(post_action(client, "ACTIVE", {"createImage": {"name": "s"}},
                           version="2.45").json) == {"image_id"}
