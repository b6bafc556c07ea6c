"""Hostile inputs found by hand (issue 11), each a regression case over the whole stack.

Every one of these answered 500 (or leaked, or let one project reach
another's volume) before; each must now get its 4xx with a Nova fault body.
"""

import json
import logging
import time
import uuid

import pytest

from tests.functional.stack import BLANK_ROOT, Stack

ADMIN = "admin:admin"
ALICE = "alice:p1"
BOB = "bob:p2"


def _raw(stack, method, path, data, *, token=ADMIN, version="2.1"):
    """Send ``data`` (already JSON text) as the body; (status, parsed body)."""
    resp = stack.client.open(
        f"/v2.1{path}", method=method, data=data,
        headers={"X-Auth-Token": token, "OpenStack-API-Version": f"compute {version}",
                 "Content-Type": "application/json", "Accept": "application/json"})
    return resp.status_code, json.loads(resp.data) if resp.data else None


def _bad_request(status, body):
    assert status == 400, (status, body)
    assert body["badRequest"]["code"] == 400


def _server(stack, token, name="s"):
    status, body, _ = stack.api("POST", "/servers", {"server": {
        "name": name, "flavorRef": "1", "block_device_mapping_v2": BLANK_ROOT}},
        token=token)
    assert status == 202, body
    server_id = body["server"]["id"]
    stack.wait_for_server_status(server_id, "ACTIVE")
    return server_id


# --- 500s from input -------------------------------------------------------------------

@pytest.mark.parametrize("deep", ["[" * 3000 + "]" * 3000, '{"a":' * 3000 + "1" + "}" * 3000,
                                  "[" * 40 + "]" * 40],
                         ids=["list-3000", "object-3000", "list-40"])
@pytest.mark.parametrize("method,path", [
    ("POST", "/servers"), ("POST", "/flavors"), ("PUT", "/os-services/1"),
    # A fixed id: the test ids must be the same in every process of a
    # parallel run (pytest-xdist compares them).
    ("POST", "/servers/2f0c6a53-7b1d-4e8a-9c35-d16e4b7a8f02/action")])
def test_deeply_nested_body_is_a_400_before_policy(stack, deep, method, path):
    # Bob may create no flavor: the body is refused before the policy says 403.
    _bad_request(*_raw(stack, method, path, deep, token=BOB))


@pytest.mark.parametrize("path", ["/flavors", "/flavors/detail"])
@pytest.mark.parametrize("key", ["minRam", "minDisk"])
@pytest.mark.parametrize("value", ["18446744073709551616", "2147483648", "9" * 5000])
def test_integer_filters_beyond_the_column_are_400(stack, path, key, value):
    status, body, _ = stack.api("GET", f"{path}?{key}={value}")
    _bad_request(status, body)


@pytest.mark.parametrize("path", ["/servers", "/servers/detail", "/flavors"])
def test_a_limit_of_5000_digits_is_400(stack, path):
    _bad_request(*stack.api("GET", f"{path}?limit={'9' * 5000}")[:2])


@pytest.mark.parametrize("query", ["changes-since=0001-01-01T00:00:00%2B01:00",
                                   "changes-before=9999-12-31T23:59:59-01:00"],
                         ids=["since-year-1", "before-year-9999"])
def test_instance_action_dates_out_of_range_are_400(stack, query):
    server_id = _server(stack, ALICE)
    status, body, _ = stack.api("GET", f"/servers/{server_id}/os-instance-actions?{query}",
                                version="2.66", token=ALICE)
    _bad_request(status, body)


def _flavor(**extra):
    return {"flavor": dict({"name": f"f-{uuid.uuid4().hex[:8]}", "ram": 64, "vcpus": 1,
                            "disk": 1}, **extra)}


def test_a_flavor_id_of_401_digits_is_400(stack):
    body = json.dumps(_flavor())[:-2] + ', "id": 1' + "0" * 400 + "}}"
    _bad_request(*_raw(stack, "POST", "/flavors", body))


def test_a_whole_number_flavor_id_is_still_its_string_form(stack):
    status, body, _ = stack.api("POST", "/flavors", _flavor(id=1234))
    assert status == 200 and body["flavor"]["id"] == "1234", body


@pytest.mark.parametrize("what", ["server", "flavor"])
def test_a_lone_surrogate_in_a_name_is_400(stack, what):
    payload = ({"server": {"name": "\ud800", "flavorRef": "1",
                           "block_device_mapping_v2": BLANK_ROOT}}
               if what == "server" else _flavor(name="x\ud800"))
    # json.dumps writes the surrogate as the escape a client would send.
    _bad_request(*_raw(stack, "POST", f"/{what}s", json.dumps(payload)))


@pytest.mark.parametrize("raw_value", ['"' + "9" * 400 + '"', "1e999", "NaN", "Infinity",
                                       "-Infinity"])
def test_non_finite_rxtx_factor_is_400_and_detail_stays_strict_json(stack, raw_value):
    body = json.dumps(_flavor())[:-2] + f', "rxtx_factor": {raw_value}' + "}}"
    _bad_request(*_raw(stack, "POST", "/flavors", body))
    resp = stack.client.get("/v2.1/flavors/detail", headers={"X-Auth-Token": ADMIN})
    assert resp.status_code == 200
    json.loads(resp.data, parse_constant=lambda name: pytest.fail(f"bare {name}"))


def test_non_finite_numbers_are_refused_anywhere_in_a_body(stack):
    body = '{"server": {"name": "s", "flavorRef": "1", "min_count": 1e999}}'
    _bad_request(*_raw(stack, "POST", "/servers", body))


# --- cross-project reach ------------------------------------------------------------------

def test_another_projects_volume_cannot_be_attached(stack):
    server_id = _server(stack, BOB)
    volume = stack.cinder.create(stack.context(project="p1"), 1, "alice's", "")
    path = f"/servers/{server_id}/os-volume_attachments"
    unknown = stack.api("POST", path, {"volumeAttachment": {"volumeId": str(uuid.uuid4())}},
                        token=BOB)
    foreign = stack.api("POST", path, {"volumeAttachment": {"volumeId": volume["id"]}},
                        token=BOB)
    assert foreign[0] == unknown[0] == 404, (foreign, unknown)
    assert stack.cinder.get(None, volume["id"])["status"] == "available"
    assert not [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume["id"]]


def test_another_projects_volume_cannot_be_booted_from(stack):
    volume = stack.cinder.create(stack.context(project="p1"), 1, "alice's", "")

    def boot(volume_id):
        return stack.api("POST", "/servers", {"server": {
            "name": "s", "flavorRef": "1", "block_device_mapping_v2": [{
                "source_type": "volume", "destination_type": "volume", "boot_index": 0,
                "uuid": volume_id}]}}, token=BOB)[:2]

    missing = str(uuid.uuid4())
    foreign, unknown = boot(volume["id"]), boot(missing)
    assert foreign[0] == unknown[0] == 400, (foreign, unknown)
    assert foreign[1]["badRequest"]["message"].replace(volume["id"], "V") == \
        unknown[1]["badRequest"]["message"].replace(missing, "V")
    assert not stack.cinder.attachments


def test_an_admin_may_still_attach_any_projects_volume(stack):
    server_id = _server(stack, BOB)
    volume = stack.cinder.create(stack.context(project="p1"), 1, "alice's", "")
    status, body, _ = stack.api(
        "POST", f"/servers/{server_id}/os-volume_attachments",
        {"volumeAttachment": {"volumeId": volume["id"]}}, token=ADMIN)
    assert status == 200, body


def test_another_projects_server_as_marker_looks_unknown(stack):
    alices = _server(stack, ALICE)
    _server(stack, BOB)
    foreign = stack.api("GET", f"/servers?marker={alices}", token=BOB)
    unknown = stack.api("GET", f"/servers?marker={uuid.uuid4()}", token=BOB)
    assert foreign[0] == unknown[0] == 400
    assert foreign[1]["badRequest"]["message"].replace(alices, "M") == \
        unknown[1]["badRequest"]["message"].split("[")[0] + "[M] not found"


# --- leaks on refusal ----------------------------------------------------------------------

@pytest.mark.parametrize("key", ["visibility", "owner"])
def test_create_image_with_an_image_attribute_makes_no_snapshot(stack, key):
    server_id = _server(stack, ALICE)
    status, body, _ = stack.api("POST", f"/servers/{server_id}/action", {
        "createImage": {"name": "img", "metadata": {key: "public"}}}, token=ALICE)
    _bad_request(status, body)
    assert stack.cinder.snapshots == {}
    assert not [c for c in stack.cinder.calls if c[0] == "create_snapshot_force"]
    # The server's delete-on-termination volume can still go with it.
    stack.api("DELETE", f"/servers/{server_id}", token=ALICE, status=204)
    stack.wait_for_server_gone(server_id)
    stack.wait(lambda: not stack.cinder.volumes, what="root volume deleted")


def test_create_image_deletes_its_snapshots_when_glance_fails(stack):
    server_id = _server(stack, ALICE)

    def refuse(*args, **kwargs):
        raise RuntimeError("glance is down")

    stack.glance.create = refuse
    status, body, _ = stack.api("POST", f"/servers/{server_id}/action", {
        "createImage": {"name": "img"}}, token=ALICE)
    assert status == 500, body
    assert [c for c in stack.cinder.calls if c[0] == "create_snapshot_force"]
    assert stack.cinder.snapshots == {}


def _refused_create_image(stack, server_id):
    status, body, _ = stack.api("POST", f"/servers/{server_id}/action", {
        "createImage": {"name": "img", "metadata": {"os_glance_foo": "1"}}}, token=ALICE)
    assert status == 403, body
    return body["forbidden"]["message"]


def test_create_image_refused_by_glance_deletes_snapshots_still_creating(stack):
    """Regression: the undo deleted them while ``creating``; Cinder refused, they stayed."""
    server_id = _server(stack, ALICE)
    stack.cinder.snapshot_create_seconds = 1.0
    message = _refused_create_image(stack, server_id)
    assert message == ("Glance refused the request: Access was denied to this resource. "
                       "Attribute 'os_glance_foo' is reserved.")
    assert [c for c in stack.cinder.calls if c[0] == "create_snapshot_force"]
    # Deleted before the answer, not left for anyone.
    assert stack.cinder.snapshots == {}
    stack.api("DELETE", f"/servers/{server_id}", token=ALICE, status=204)
    stack.wait_for_server_gone(server_id)
    stack.wait(lambda: not stack.cinder.volumes, what="root volume deleted")


@pytest.fixture
def impatient_stack(tmp_path):
    """The undo gives up at once; the conductors' cleanup runs every second."""
    s = Stack(tmp_path, conf_overrides={
        ("cinder", "snapshot_undo_timeout"): 0.0,
        ("conductor", "abandoned_snapshot_cleanup_interval"): 1})
    yield s
    s.stop()


def test_a_snapshot_still_creating_after_the_undo_timeout_is_deleted_later(impatient_stack):
    stack = impatient_stack
    server_id = _server(stack, ALICE)
    stack.cinder.snapshot_create_seconds = 2.0
    _refused_create_image(stack, server_id)
    (snapshot,) = stack.cinder.snapshots.values()
    assert snapshot["metadata"]["volumesvc_undo"] == "delete"
    stack.wait(lambda: not stack.cinder.snapshots, timeout=15,
               what="the marked snapshot deleted by the conductor")


def test_a_successful_create_image_keeps_its_snapshots_from_the_cleanup(impatient_stack):
    stack = impatient_stack
    server_id = _server(stack, ALICE)
    stack.api("POST", f"/servers/{server_id}/action", {"createImage": {"name": "img"}},
              token=ALICE, status=202)
    assert len(stack.cinder.snapshots) == 1
    time.sleep(2.5)  # two runs of the cleanup
    assert len(stack.cinder.snapshots) == 1


# --- log forging ---------------------------------------------------------------------------

def test_a_newline_in_the_path_never_starts_a_log_line(stack, caplog):
    caplog.set_level(logging.INFO, logger="volumesvc")
    status, body, _ = stack.api("GET", "/servers/x%0a2026-01-01 00:00:00 ERROR forged")
    assert status == 404 and body["itemNotFound"]["code"] == 404
    messages = [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]
    assert messages and all("\n" not in m and "\\n" in m for m in messages), messages
