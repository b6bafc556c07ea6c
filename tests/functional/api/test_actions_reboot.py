"""Reboot at 2.1: SOFT vs HARD state tables of doc/source/contributor/contract.rst §2, lock,
launched_at, 404s, bad bodies.
"""


from tests.functional.api import fixtures
from tests.functional.api.server_helpers import server_uuid

world = fixtures.ServerActionsWorld  # the world of the client fixture (conftest.py)

HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "demo:demo-project",
    "x-openstack-nova-api-version": "2.1",
}


def test_soft_reboot_an_active_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # soft reboot an active server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
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

    # a second soft reboot while rebooting is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/action",
        json={"reboot": {"type": "soft"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('ACTIVE')} while it is in task_state rebooting")

    # a hard reboot may interrupt a soft one
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/action",
        json={"reboot": {"type": "Hard"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # and another hard reboot while rebooting_hard is accepted too
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ACTIVE')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # soft reboot of a stopped server is refused on vm_state
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["code"] == 409
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('STOPPED')} while it is in vm_state stopped")

    # hard reboot of a stopped server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # soft reboot of a paused server is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('PAUSED')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('PAUSED')} while it is in vm_state paused")

    # hard reboot of a paused server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('PAUSED')}/action",
        json={"reboot": {"type": "hard"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # soft reboot of a suspended server is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('SUSPENDED')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text

    # hard reboot of a suspended server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('SUSPENDED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # soft reboot of a server in error is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ERROR')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('ERROR')} while it is in vm_state error")

    # hard reboot of a server in error
    resp = client.post(
        f"/v2.1/servers/{server_uuid('ERROR')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # hard reboot of a building server is refused on vm_state
    resp = client.post(
        f"/v2.1/servers/{server_uuid('BUILDING')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('BUILDING')} while it is in vm_state building")

    # hard reboot of a rescued server is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('RESCUED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('RESCUED')} while it is in vm_state rescued")

    # hard reboot of a shelved server is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('SHELVED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text

    # hard reboot of a resized server is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('RESIZED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('RESIZED')} while it is in vm_state resized")

    # soft reboot while another soft reboot runs is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('REBOOTING')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text

    # soft reboot while a hard reboot runs is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('REBOOTING_HARD')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('REBOOTING_HARD')} while it is in task_state "
        "rebooting_hard")

    # hard reboot while pausing is accepted
    resp = client.post(
        f"/v2.1/servers/{server_uuid('PAUSING')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # hard reboot while deleting is refused on task_state
    resp = client.post(
        f"/v2.1/servers/{server_uuid('DELETING')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('DELETING')} while it is in task_state deleting")

    # hard reboot while snapshotting is refused
    resp = client.post(
        f"/v2.1/servers/{server_uuid('SNAPSHOTTING')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('SNAPSHOTTING')} while it is in task_state "
        "image_snapshot")

    # a server that never ran cannot be rebooted
    resp = client.post(
        f"/v2.1/servers/{server_uuid('NOT_LAUNCHED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Cannot 'reboot' instance {server_uuid('NOT_LAUNCHED')} while it is in launched_at None")

    # a locked server refuses its owner
    resp = client.post(
        f"/v2.1/servers/{server_uuid('LOCKED')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Instance {server_uuid('LOCKED')} is locked")

    # the lock is checked before the state
    resp = client.post(
        f"/v2.1/servers/{server_uuid('LOCKED_STOPPED')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 409, resp.text
    assert resp.json["conflictingRequest"]["message"] == (
        f"Instance {server_uuid('LOCKED_STOPPED')} is locked")

    # an admin may reboot a locked server
    resp = client.post(
        f"/v2.1/servers/{server_uuid('LOCKED')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 202, resp.text

    # another project's server is not found
    resp = client.post(
        f"/v2.1/servers/{server_uuid('OTHER_PROJECT')}/action",
        json={"reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text
    assert resp.json["itemNotFound"]["message"] == (
        f"Instance {server_uuid('OTHER_PROJECT')} could not be found.")

    # a deleted server is not found
    resp = client.post(
        f"/v2.1/servers/{server_uuid('DELETED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # an unknown server is not found
    resp = client.post(
        "/v2.1/servers/5e4e0000-0000-4000-8000-0000000000ff/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # a project id prefix that is not hex is no route (404)
    resp = client.post(
        f"/v2.1/demo-project/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # a bad reboot type is a 400
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "WARM"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["code"] == 400

    # type is required
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # there is no os-reboot action
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"os-reboot": {"type": "SOFT"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "There is no such action: os-reboot"

    # a Nova action this service does not serve is a clear 400
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"pause": None},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "The 'pause' server action is not supported by this service.")

    # two actions at once are a 400
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "HARD"}, "createImage": {"name": "x"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    # the action needs a token
    resp = client.post(
        f"/v2.1/servers/{server_uuid('STOPPED')}/action",
        json={"reboot": {"type": "HARD"}},
        headers={**HEADERS, "x-auth-token": ""})
    assert resp.status_code == 401, resp.text

    # GET on the action URL is a 405
    resp = client.get(f"/v2.1/servers/{server_uuid('STOPPED')}/action", headers=HEADERS)
    assert resp.status_code == 405, resp.text

