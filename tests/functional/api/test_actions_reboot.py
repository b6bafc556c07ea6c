"""Reboot at 2.1: SOFT vs HARD state tables of doc/source/contributor/contract.rst §2, lock,
launched_at, 404s, bad bodies.
"""


from tests.functional.api import fixtures
from tests.functional.api.journeys import (
    ADMIN_TOKEN,
    action_url,
    assert_fault,
    cannot,
    json_headers,
)
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = json_headers("2.1", "demo:demo-project", legacy=True)


SOFT = {"reboot": {"type": "SOFT"}}
HARD = {"reboot": {"type": "HARD"}}


def reboot_refused(name, state):
    return cannot("reboot", server_uuid(name), state)


def locked(name):
    return f"Instance {server_uuid(name)} is locked"


# (step, server name, body, status, message or None), in journey order, after the first
# reboot and its recorded action.
STEPS = [
    ("a second soft reboot while rebooting is refused", "ACTIVE", {"reboot": {"type": "soft"}},
     409, reboot_refused("ACTIVE", "task_state rebooting")),
    ("a hard reboot may interrupt a soft one", "ACTIVE", {"reboot": {"type": "Hard"}}, 202, None),
    ("and another hard reboot while rebooting_hard is accepted too", "ACTIVE", HARD, 202, None),
    ("soft reboot of a stopped server is refused on vm_state", "STOPPED", SOFT, 409,
     reboot_refused("STOPPED", "vm_state stopped")),
    ("hard reboot of a stopped server", "STOPPED", HARD, 202, None),
    ("soft reboot of a paused server is refused", "PAUSED", SOFT, 409,
     reboot_refused("PAUSED", "vm_state paused")),
    ("hard reboot of a paused server", "PAUSED", {"reboot": {"type": "hard"}}, 202, None),
    ("soft reboot of a suspended server is refused", "SUSPENDED", SOFT, 409, None),
    ("hard reboot of a suspended server", "SUSPENDED", HARD, 202, None),
    ("soft reboot of a server in error is refused", "ERROR", SOFT, 409,
     reboot_refused("ERROR", "vm_state error")),
    ("hard reboot of a server in error", "ERROR", HARD, 202, None),
    ("hard reboot of a building server is refused on vm_state", "BUILDING", HARD, 409,
     reboot_refused("BUILDING", "vm_state building")),
    ("hard reboot of a rescued server is refused", "RESCUED", HARD, 409,
     reboot_refused("RESCUED", "vm_state rescued")),
    ("hard reboot of a shelved server is refused", "SHELVED", HARD, 409, None),
    ("hard reboot of a resized server is refused", "RESIZED", HARD, 409,
     reboot_refused("RESIZED", "vm_state resized")),
    ("soft reboot while another soft reboot runs is refused", "REBOOTING", SOFT, 409, None),
    ("soft reboot while a hard reboot runs is refused", "REBOOTING_HARD", SOFT, 409,
     reboot_refused("REBOOTING_HARD", "task_state rebooting_hard")),
    ("hard reboot while pausing is accepted", "PAUSING", HARD, 202, None),
    ("hard reboot while deleting is refused on task_state", "DELETING", HARD, 409,
     reboot_refused("DELETING", "task_state deleting")),
    ("hard reboot while snapshotting is refused", "SNAPSHOTTING", HARD, 409,
     reboot_refused("SNAPSHOTTING", "task_state image_snapshot")),
    ("a server that never ran cannot be rebooted", "NOT_LAUNCHED", HARD, 409,
     reboot_refused("NOT_LAUNCHED", "launched_at None")),
    ("a locked server refuses its owner", "LOCKED", SOFT, 409, locked("LOCKED")),
    ("the lock is checked before the state", "LOCKED_STOPPED", SOFT, 409,
     locked("LOCKED_STOPPED")),
]
# (step, path, body, status, message or None): the 404s and bad bodies, in journey order.
NOT_FOUND_AND_BAD_BODIES = [
    ("another project's server is not found", action_url(server_uuid("OTHER_PROJECT")), SOFT,
     404, f"Instance {server_uuid('OTHER_PROJECT')} could not be found."),
    ("a deleted server is not found", action_url(server_uuid("DELETED")), HARD, 404, None),
    ("an unknown server is not found", action_url("5e4e0000-0000-4000-8000-0000000000ff"), HARD,
     404, None),
    ("a project id prefix that is not hex is no route (404)",
     f"/v2.1/demo-project/servers/{server_uuid('STOPPED')}/action", HARD, 404, None),
    ("type is required", action_url(server_uuid("STOPPED")), {"reboot": {}}, 400, None),
    ("there is no os-reboot action", action_url(server_uuid("STOPPED")),
     {"os-reboot": {"type": "SOFT"}}, 400, "There is no such action: os-reboot"),
    ("a Nova action this service does not serve is a clear 400",
     action_url(server_uuid("STOPPED")), {"pause": None}, 400,
     "The 'pause' server action is not supported by this service."),
    ("two actions at once are a 400", action_url(server_uuid("STOPPED")),
     {"reboot": {"type": "HARD"}, "createImage": {"name": "x"}}, 400, None),
]


def test_soft_reboot_an_active_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # soft reboot an active server
    resp = client.post(action_url(server_uuid("ACTIVE")), json=SOFT, headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # the server shows its reboot task in the action list
    resp = client.get(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/os-instance-actions",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert len(resp.json["instanceActions"]) == 1
    assert resp.json["instanceActions"][0]["action"] == "reboot"
    assert resp.json["instanceActions"][0]["user_id"] == "demo"
    assert resp.json["instanceActions"][0]["project_id"] == "demo-project"

    for step, name, body, status, message in STEPS:
        resp = client.post(action_url(server_uuid(name)), json=body, headers=HEADERS)
        assert_fault(resp, status, message, step=step)
        if name == "STOPPED" and status == 409:
            assert resp.json["conflictingRequest"]["code"] == 409

    # an admin may reboot a locked server
    resp = client.post(action_url(server_uuid("LOCKED")), json=SOFT,
                       headers={**HEADERS, "x-auth-token": ADMIN_TOKEN})
    assert resp.status_code == 202, resp.text

    for step, path, body, status, message in NOT_FOUND_AND_BAD_BODIES[:4]:
        assert_fault(client.post(path, json=body, headers=HEADERS), status, message, step=step)

    # a bad reboot type is a 400
    resp = client.post(action_url(server_uuid("STOPPED")), json={"reboot": {"type": "WARM"}},
                       headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    for step, path, body, status, message in NOT_FOUND_AND_BAD_BODIES[4:]:
        assert_fault(client.post(path, json=body, headers=HEADERS), status, message, step=step)

    # the action needs a token
    resp = client.post(action_url(server_uuid("STOPPED")), json=HARD,
                       headers={**HEADERS, "x-auth-token": ""})
    assert resp.status_code == 401, resp.text

    # GET on the action URL is a 405
    resp = client.get(action_url(server_uuid("STOPPED")), headers=HEADERS)
    assert resp.status_code == 405, resp.text
