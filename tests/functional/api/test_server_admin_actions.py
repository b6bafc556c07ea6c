"""lock, unlock and os-resetState over raw HTTP: bodies per version, owner/admin rules.

The real app on the server-actions world: a lock by the owner or by an
admin, ``locked_reason`` from 2.73, the ``locked`` and ``locked_reason`` keys
of the server, the 409 a locked server answers a member's changes while an
admin passes, unlock_override, and the admin-only reset of vm_state.
"""

import pytest

from tests.functional.api.server_helpers import (
    ADMIN,
    call,
    instance_of,
    post_action,
    server_path,
    server_uuid,
)
from volumesvc import context as vs_context
from volumesvc.objects import instance_action as action_obj


def _actions(deps, name="ACTIVE"):
    return [a.action for a in action_obj.list_actions(
        deps.db, vs_context.get_admin_context(), server_uuid(name))]


def test_owner_locks_and_unlocks(env):
    client, deps = env
    assert post_action(client, "ACTIVE", {"lock": None}).status_code == 202
    instance = instance_of(deps)
    assert (instance.locked, instance.locked_by, instance.locked_reason) == (
        True, "owner", None)
    server = call(client, "GET", server_path(), version="2.9")[1]["server"]
    assert server["locked"] is True and "locked_reason" not in server
    assert "locked" not in call(client, "GET", server_path(), version="2.8")[1]["server"]
    assert post_action(client, "ACTIVE", {"unlock": None}).status_code == 202
    assert instance_of(deps).locked is False
    assert {"lock", "unlock"} <= set(_actions(deps))


def test_locked_reason_from_2_73(env):
    client, deps = env
    resp = post_action(client, "ACTIVE", {"lock": {"locked_reason": "maintenance"}},
                       version="2.72")
    # Below 2.73 the body is not read: the lock is taken without a reason.
    assert resp.status_code == 202
    assert instance_of(deps).locked_reason is None
    resp = post_action(client, "ACTIVE", {"lock": {"locked_reason": "maintenance"}},
                       version="2.73")
    assert resp.status_code == 202
    server = call(client, "GET", server_path(), version="2.73")[1]["server"]
    assert (server["locked"], server["locked_reason"]) == (True, "maintenance")
    assert post_action(client, "ACTIVE", {"lock": {"locked_reason": "x" * 256}},
                       version="2.73").status_code == 400
    assert post_action(client, "ACTIVE", {"lock": {"reason": "x"}},
                       version="2.73").status_code == 400
    assert post_action(client, "ACTIVE", {"unlock": None}, version="2.73").status_code == 202
    server = call(client, "GET", server_path(), version="2.73")[1]["server"]
    assert (server["locked"], server["locked_reason"]) == (False, None)


def test_a_locked_server_refuses_a_members_changes_and_not_an_admins(env):
    client, _ = env
    assert post_action(client, "ACTIVE", {"lock": {}}).status_code == 202
    resp = post_action(client, "ACTIVE", {"reboot": {"type": "SOFT"}})
    assert resp.status_code == 409 and "locked" in resp.json["conflictingRequest"]["message"]
    status, body, _ = call(client, "DELETE", server_path())
    assert status == 409, body
    status, _, _ = call(client, "POST", server_path() + "/metadata", {"metadata": {"a": "b"}})
    assert status == 409
    assert post_action(client, "ACTIVE", {"reboot": {"type": "SOFT"}}, headers=ADMIN).status_code \
        == 202


def test_an_admins_lock_needs_unlock_override(env):
    client, deps = env
    assert post_action(client, "ACTIVE", {"lock": None}, headers=ADMIN).status_code == 202
    assert instance_of(deps).locked_by == "admin"
    resp = post_action(client, "ACTIVE", {"unlock": None})
    assert resp.status_code == 403, resp.json
    assert "unlock_override" in resp.json["forbidden"]["message"]
    assert instance_of(deps).locked is True
    assert post_action(client, "ACTIVE", {"unlock": None}, headers=ADMIN).status_code == 202
    assert instance_of(deps).locked is False


def test_an_admin_unlocks_an_owners_lock(env):
    client, deps = env
    assert post_action(client, "ACTIVE", {"lock": None}).status_code == 202
    assert post_action(client, "ACTIVE", {"unlock": None}, headers=ADMIN).status_code == 202
    assert instance_of(deps).locked is False


def test_unlock_takes_no_body_and_another_project_sees_404(env):
    client, _ = env
    assert post_action(client, "ACTIVE", {"unlock": {"x": 1}}).status_code == 400
    assert post_action(client, "OTHER_PROJECT", {"lock": None}).status_code == 404


@pytest.mark.parametrize("state, vm_state", [("error", "error"), ("active", "active")])
def test_reset_state_is_admin_only_and_clears_the_task(env, state, vm_state):
    client, deps = env
    resp = post_action(client, "REBOOTING", {"os-resetState": {"state": state}})
    assert resp.status_code == 403, resp.json
    resp = post_action(client, "REBOOTING", {"os-resetState": {"state": state}}, headers=ADMIN)
    assert resp.status_code == 202, resp.json
    instance = instance_of(deps, "REBOOTING")
    assert (instance.vm_state, instance.task_state) == (vm_state, None)
    assert "resetState" in _actions(deps, "REBOOTING")
    status = call(client, "GET", server_path("REBOOTING"), headers=ADMIN)[1]["server"]["status"]
    assert status == vm_state.upper()


@pytest.mark.parametrize("body", [{"state": "stopped"}, {}, None, {"state": "error", "x": 1}])
def test_reset_state_bodies(env, body):
    client, _ = env
    resp = post_action(client, "ACTIVE", {"os-resetState": body}, headers=ADMIN)
    assert resp.status_code == 400, resp.json


@pytest.mark.parametrize("action", ["forceDelete", "restore"])
def test_force_delete_and_restore_stay_refused(env, action):
    client, _ = env
    resp = post_action(client, "ACTIVE", {action: None}, headers=ADMIN)
    assert resp.status_code == 400
    assert "not supported" in resp.json["badRequest"]["message"]


