"""os-stop, os-start, shelve, shelveOffload, unshelve over raw HTTP: state rules, version gates.

The real app with a recording conductor: every contract §2 cell of each action's
gate, the lock and launched_at checks, policies, and the unshelve bodies of
2.1 (ignored), 2.77 (availability_zone) and 2.91 (host, null zone).
"""

import oslo_messaging as messaging
import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServerActionsWorld as world
from tests.functional.api.server_helpers import (
    ADMIN,
    DEMO,
    TASK_STATES,
    VM_STATES,
    instance_of,
    post_action,
    race_task_state,
    server_uuid,
    set_state,
)
from volumesvc import context as vs_context
from volumesvc.api.logic import states
from volumesvc.db import models
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import service as service_obj

# action key → (gate, task_state set by the API, conductor cast, instance action, headers)
ACTIONS = {
    "os-stop": (states.STOP, "powering-off", "stop_instance", "stop", DEMO),
    "os-start": (states.START, "powering-on", "start_instance", "start", DEMO),
    "shelve": (states.SHELVE, "shelving", "shelve_instance", "shelve", DEMO),
    "shelveOffload": (states.SHELVE_OFFLOAD, "shelving_offloading",
                      "shelve_offload_instance", "shelveOffload", ADMIN),
    "unshelve": (states.UNSHELVE, "unshelving", "unshelve_instance", "unshelve", DEMO),
}
ALL_VM_STATES = [*VM_STATES, "shelved_offloaded"] if "shelved_offloaded" not in VM_STATES \
    else VM_STATES
ALL_TASK_STATES = [*TASK_STATES, "shelving", "unshelving", "powering-on"]


@pytest.fixture
def env():
    with fixtures.open_world(world) as (app, deps):
        ctx = vs_context.get_admin_context()
        for host, zone in (("up-host", "nova"), ("other-host", "az2")):
            service_obj.heartbeat(deps.db, ctx, host=host, binary="volumesvc-compute",
                                  topic="compute", version=1, capabilities={})
            service = service_obj.get_by_host_and_binary(deps.db, ctx, host,
                                                         "volumesvc-compute")
            with deps.db.writer(ctx) as session:   # no API sets a service's zone
                session.get(models.Service, service.id).availability_zone = zone
        yield app.test_client(), deps


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_state_grid(env, action):
    client, deps = env
    gate, task_state, cast, _, headers = ACTIONS[action]
    uuid = server_uuid("ACTIVE")
    for vm_state in ALL_VM_STATES:
        for current in ALL_TASK_STATES:
            set_state(deps, "ACTIVE", vm_state, current)
            response = post_action(client, "ACTIVE", {action: None}, headers)
            if vm_state in gate.vm_states and current is None:
                assert response.status_code == 202, (vm_state, current, response.json)
                assert response.data == b""
                assert instance_of(deps).task_state == task_state
                assert deps.conductor.casts[-1][0] == cast
                assert deps.conductor.casts[-1][1]["instance_uuid"] == uuid
                continue
            assert response.status_code == 409, (vm_state, current)
            attr, state = (("vm_state", vm_state) if vm_state not in gate.vm_states
                           else ("task_state", current))
            assert response.json == {"conflictingRequest": {
                "code": 409, "message":
                f"Cannot '{gate.action}' instance {uuid} while it is in {attr} {state}"}}


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_lock_launched_and_instance_action(env, action):
    client, deps = env
    gate, _, _, recorded, headers = ACTIONS[action]
    allowed = sorted(gate.vm_states)[0]
    set_state(deps, "LOCKED", allowed, None)
    if headers is DEMO:
        response = post_action(client, "LOCKED", {action: None})
        assert response.status_code == 409
        assert response.json["conflictingRequest"]["message"] == \
            f"Instance {server_uuid('LOCKED')} is locked"
    assert post_action(client, "LOCKED", {action: None}, ADMIN).status_code == 202
    actions = action_obj.list_actions(deps.db, vs_context.get_admin_context(),
                                      server_uuid("LOCKED"))
    assert [a.action for a in actions] == [recorded]

    set_state(deps, "NOT_LAUNCHED", allowed, None)
    response = post_action(client, "NOT_LAUNCHED", {action: None}, headers)
    assert response.status_code == 409
    assert response.json["conflictingRequest"]["message"].endswith("launched_at None")


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_404_and_bad_bodies(env, action):
    client, deps = env
    _, _, _, _, headers = ACTIONS[action]
    # (an admin sees every project's servers, so OTHER_PROJECT is not a 404 for it)
    for target in ("DELETED", "not-a-uuid", *(("OTHER_PROJECT",) if headers is DEMO else ())):
        assert post_action(client, target, {action: None}, headers).status_code == 404
    if action != "unshelve":
        response = post_action(client, "ACTIVE", {action: {"force": True}}, headers)
        assert response.status_code == 400
    assert deps.conductor.casts == []


@pytest.mark.parametrize("action", sorted(set(ACTIONS) - {"unshelve"}))
def test_an_empty_object_body_is_taken_like_null(env, action):
    """Regression: ``{"os-stop": {}}`` (tempest sends it) was a 400 "not of type 'null'"."""
    client, deps = env
    gate, task_state, cast, _, headers = ACTIONS[action]
    set_state(deps, "ACTIVE", sorted(gate.vm_states)[0], None)
    response = post_action(client, "ACTIVE", {action: {}}, headers)
    assert response.status_code == 202, response.json
    assert instance_of(deps).task_state == task_state
    assert deps.conductor.casts[-1][0] == cast


def test_shelve_offload_is_admin_only(env):
    client, deps = env
    set_state(deps, "ACTIVE", "shelved", None)
    response = post_action(client, "ACTIVE", {"shelveOffload": None})
    assert response.status_code == 403
    assert instance_of(deps).task_state is None


def test_shelve_of_an_image_backed_server_is_a_400(env):
    client, deps = env
    response = post_action(client, "IMAGE_BACKED", {"shelve": None})
    assert response.status_code == 400
    assert "boot from a volume" in response.json["badRequest"]["message"]
    assert instance_of(deps, "IMAGE_BACKED").task_state is None


def test_a_cast_above_the_conductor_cap_is_a_503(env, monkeypatch):
    """``[upgrade_levels] conductor`` below what a request needs: 503, not 500."""
    client, deps = env

    def capped(ctxt, **kwargs):
        raise messaging.RPCVersionCapError(version="1.1", version_cap="1.0")

    monkeypatch.setattr(deps.conductor, "stop_instance", capped)
    response = post_action(client, "ACTIVE", {"os-stop": None})
    assert response.status_code == 503
    assert response.json["serviceUnavailable"]["message"].startswith(
        "volumesvc-conductor is not on the same version as volumesvc-api")


def test_concurrent_stop_loses_the_compare_and_swap(env, monkeypatch):
    client, deps = env
    race_task_state(monkeypatch)
    response = post_action(client, "ACTIVE", {"os-stop": None})
    assert response.status_code == 409
    assert "task_state deleting" in response.json["conflictingRequest"]["message"]
    assert deps.conductor.casts == []


# -- unshelve bodies per microversion -----------------------------------------------------


def _unshelve(client, body, version, headers=DEMO):
    return post_action(client, "ACTIVE", {"unshelve": body}, headers, version=version)


def test_unshelve_body_is_ignored_below_2_77(env):
    client, deps = env
    set_state(deps, "ACTIVE", "shelved_offloaded", None)
    response = _unshelve(client, {"availability_zone": "nowhere"}, "2.76")
    assert response.status_code == 202
    assert deps.conductor.casts[-1][1]["host"] is None


@pytest.mark.parametrize("body,version,status,message", [
    ({"availability_zone": "nowhere"}, "2.77", 400, "availability zone is not available"),
    ({"availability_zone": "az2"}, "2.77", 202, None),
    ({"availability_zone": None}, "2.77", 400, None),
    ({"host": "up-host"}, "2.77", 400, None),
    ({}, "2.77", 400, None),
    ({"availability_zone": "nova", "extra": 1}, "2.77", 400, None),
    ({"availability_zone": None}, "2.91", 202, None),
    ({}, "2.91", 400, None),
    (None, "2.91", 202, None),
], ids=lambda value: None if not isinstance(value, str) or " " in value else value)
def test_unshelve_zone_bodies_of_an_offloaded_server(env, body, version, status, message):
    client, deps = env
    set_state(deps, "ACTIVE", "shelved_offloaded", None)
    response = _unshelve(client, body, version)
    assert response.status_code == status, response.json
    if message:
        assert message in response.json["badRequest"]["message"]
    if status == 202:
        cast = deps.conductor.casts[-1][1]
        if body:
            assert cast["availability_zone"] == body["availability_zone"]
            assert instance_of(deps).availability_zone == body["availability_zone"]


def test_unshelve_zone_or_host_of_a_shelved_server_is_a_409(env):
    client, deps = env
    set_state(deps, "ACTIVE", "shelved", None)
    response = _unshelve(client, {"availability_zone": "nova"}, "2.77")
    assert response.status_code == 409
    assert "SHELVED_OFFLOADED" in response.json["conflictingRequest"]["message"]
    response = _unshelve(client, {"host": "up-host"}, "2.91", ADMIN)
    assert response.status_code == 409
    assert _unshelve(client, None, "2.91").status_code == 202


def test_unshelve_to_a_host_at_2_91(env):
    client, deps = env
    set_state(deps, "ACTIVE", "shelved_offloaded", None)
    assert _unshelve(client, {"host": "up-host"}, "2.91").status_code == 403   # admin only
    response = _unshelve(client, {"host": "nohost"}, "2.91", ADMIN)
    assert response.status_code == 400
    assert response.json["badRequest"]["message"] == "Compute host nohost could not be found."
    response = _unshelve(client, {"host": "other-host", "availability_zone": "nova"}, "2.91",
                         ADMIN)
    assert response.status_code == 400
    assert "not in the requested availability zone" in response.json["badRequest"]["message"]
    assert deps.conductor.casts == []
    response = _unshelve(client, {"host": "other-host", "availability_zone": "az2"}, "2.91",
                         ADMIN)
    assert response.status_code == 202
    assert deps.conductor.casts[-1] == ("unshelve_instance", {
        "instance_uuid": server_uuid("ACTIVE"), "availability_zone": "az2", "host": "other-host"})
