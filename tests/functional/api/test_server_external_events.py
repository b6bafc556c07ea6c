"""POST /os-server-external-events as raw HTTP (doc/source/contributor/contract.rst §7).

Request validation per microversion (400 for the whole request), the
per-event codes 200/400/404/422, 200 versus 207, and the policy (403 for a
caller who is neither a service nor an admin). The whole service runs behind
the API, so accepted events really reach the compute.
"""

import uuid

import pytest

from volumesvc.objects import instance as instance_obj

PATH = "/os-server-external-events"
UNKNOWN = "0e9e0000-0000-4000-8000-0000000000ff"


@pytest.fixture
def hostless(stack):
    """A server the scheduler has not placed yet (no host)."""
    ctx = stack.context()
    return instance_obj.create(stack.db, ctx, {
        "project_id": ctx.project_id, "user_id": ctx.user_id, "display_name": "nohost",
        "vm_state": "building", "task_state": "scheduling", "power_state": 0}).uuid


def _post(stack, events, version="2.105", status=None, token="admin:admin"):
    code, body, _ = stack.api("POST", PATH, {"events": events}, version=version,
                              status=status, token=token)
    return code, body


@pytest.mark.parametrize("name, first", [
    ("volume-extended", "2.51"),
    ("power-update", "2.76"),
    ("accelerator-request-bound", "2.82"),
    ("volume-reimaged", "2.93"),
])
def test_event_names_arrive_with_their_microversion(stack, server, name, first):
    event = {"name": name, "server_uuid": server, "tag": "POWER_ON"}
    major, minor = first.split(".")
    code, body = _post(stack, [event], version=f"{major}.{int(minor) - 1}")
    assert code == 400 and "badRequest" in body
    code, body = _post(stack, [event], version=first)
    assert code == 200
    assert body["events"] == [dict(event, code=200, status="completed")]


@pytest.mark.parametrize("body", [
    {},
    {"events": []},
    {"events": [{"name": "network-changed"}]},
    {"events": [{"name": "network-bogus", "server_uuid": UNKNOWN}]},
    {"events": [{"name": "network-changed", "server_uuid": UNKNOWN, "extra": 1}]},
    {"events": [{"name": "network-changed", "server_uuid": UNKNOWN, "status": "done"}]},
    {"events": [{"name": "network-changed", "server_uuid": UNKNOWN, "tag": "t" * 256}]},
    {"events": [{"name": "network-changed", "server_uuid": "not-a-uuid"}]},
    {"events": [], "other": 1},
], ids=["no-events", "empty", "no-server", "unknown-name", "extra-key", "bad-status",
        "long-tag", "bad-uuid", "extra-top-key"])
def test_bad_bodies_are_400(stack, body):
    code, payload, _ = stack.api("POST", PATH, body, version="2.105")
    assert code == 400, payload
    assert payload["badRequest"]["code"] == 400


def test_network_events_are_accepted_at_2_1(stack, server):
    events = [{"name": n, "server_uuid": server, "tag": "port-1", "status": "in-progress"}
              for n in ("network-changed", "network-vif-plugged", "network-vif-unplugged",
                        "network-vif-deleted")]
    code, body = _post(stack, events, version="2.1", status=200)
    assert [(e["code"], e["status"]) for e in body["events"]] == [(200, "completed")] * 4


def test_per_event_codes_and_207_when_some_fail(stack, server, hostless):
    volume = str(uuid.uuid4())
    events = [
        {"name": "volume-extended", "server_uuid": server, "tag": volume},
        {"name": "volume-extended", "server_uuid": UNKNOWN, "tag": volume},
        {"name": "volume-extended", "server_uuid": server},
        {"name": "power-update", "server_uuid": server},
        {"name": "network-changed", "server_uuid": hostless},
    ]
    code, body = _post(stack, events, status=207)
    assert [(e["code"], e["status"]) for e in body["events"]] == [
        (200, "completed"), (404, "failed"), (400, "failed"), (400, "failed"),
        (422, "failed")]
    # Every event comes back as sent, plus code and status.
    for sent, got in zip(events, body["events"], strict=True):
        assert {k: v for k, v in got.items() if k not in ("code", "status")} == sent


def test_207_even_when_every_event_fails(stack):
    code, body = _post(stack, [{"name": "network-changed", "server_uuid": UNKNOWN}],
                       status=207)
    assert body["events"][0]["code"] == 404


def test_power_update_sets_the_recorded_power_state(stack, server):
    _post(stack, [{"name": "power-update", "server_uuid": server, "tag": "POWER_OFF"}],
          version="2.76", status=200)
    stack.wait_instance(server, "stopped")
    assert stack.server(server)["status"] == "SHUTOFF"
    _post(stack, [{"name": "power-update", "server_uuid": server, "tag": "POWER_ON"}],
          version="2.76", status=200)
    stack.wait_instance(server, "active")


def test_a_member_gets_403(stack, server):
    code, body = _post(stack, [{"name": "network-changed", "server_uuid": server}],
                       token="u1:p1")
    assert code == 403
    assert "os-server-external-events:create" in body["forbidden"]["message"]


def test_served_with_a_project_in_the_url(stack, server):
    project = "abcd" * 8
    code, body, _ = stack.api("POST", f"/{project}{PATH}", {"events": [
        {"name": "network-changed", "server_uuid": server}]}, token=f"admin:{project}")
    assert code == 200, body

