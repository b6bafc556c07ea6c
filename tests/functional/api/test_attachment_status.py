"""Microversion 2.106: status and fault of volume attachments, over raw HTTP.

The whole service runs (API, conductor, compute on fake://, FakeCinder, fake
libvirt); the API is served by a real WSGI server on a socket and every
request is plain ``http.client``, as a client that knows nothing of
volumesvc would send it. Each body is validated against a schema written
here (not derived from the API's own tables) that forbids unknown keys, as
tempest's schemas do, so a key leaking into 2.105 or missing at 2.106 fails.
"""

import contextlib
import http.client
import json
import threading
import time
from wsgiref import simple_server

import jsonschema
import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc import exception

TOKEN = "u1:p1"
_UUID = {"type": "string", "format": "uuid"}

ATTACHMENT_2_105 = {
    "type": "object",
    "properties": {
        "volumeId": _UUID, "serverId": _UUID, "device": {"type": ["string", "null"]},
        "tag": {"type": ["string", "null"]}, "delete_on_termination": {"type": "boolean"},
        "attachment_id": _UUID, "bdm_uuid": _UUID},
    "required": ["volumeId", "serverId", "tag", "delete_on_termination", "attachment_id",
                 "bdm_uuid"],
    "additionalProperties": False,
}
FAULT = {
    "type": "object",
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"},
                   "created": {"type": "string",
                               "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"}},
    "required": ["code", "message", "created"],
    "additionalProperties": False,
}
ATTACHMENT_2_106 = {
    **ATTACHMENT_2_105,
    "properties": {
        **ATTACHMENT_2_105["properties"],
        "attachment_id": {"type": ["string", "null"], "format": "uuid"},
        "status": {"enum": ["attaching", "attached", "detaching", "error"]},
        "fault": FAULT},
    "required": ATTACHMENT_2_105["required"] + ["status"],
    # fault only with error, or on attached after a failed detach.
    "allOf": [{"if": {"properties": {"status": {"const": "error"}}},
               "then": {"required": ["fault"]}},
              {"if": {"properties": {"status": {"enum": ["attaching", "detaching"]}}},
               "then": {"not": {"required": ["fault"]}}}],
}


def _envelope(key, item, many):
    body = {"type": "array", "items": item} if many else item
    return {"type": "object", "properties": {key: body}, "required": [key],
            "additionalProperties": False}


SCHEMAS = {
    ("2.105", True): _envelope("volumeAttachments", ATTACHMENT_2_105, True),
    ("2.105", False): _envelope("volumeAttachment", ATTACHMENT_2_105, False),
    ("2.106", True): _envelope("volumeAttachments", ATTACHMENT_2_106, True),
    ("2.106", False): _envelope("volumeAttachment", ATTACHMENT_2_106, False),
}


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Http:
    """A socket-served API and plain http.client requests against it."""

    def __init__(self, app):
        self.server = simple_server.make_server("127.0.0.1", 0, app, handler_class=_Quiet)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def request(self, method, path, body=None, *, version):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.server_port, timeout=10)
        headers = {"X-Auth-Token": TOKEN, "OpenStack-API-Version": f"compute {version}",
                   "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        try:
            conn.request(method, f"/v2.1{path}", body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(raw) if raw else None

    def attachments(self, server, version):
        """GET the list, validated against the strict schema of ``version``."""
        status, body = self.request("GET", f"/servers/{server}/os-volume_attachments",
                                    version=version)
        assert status == 200, body
        jsonschema.validate(body, SCHEMAS[version, True],
                            format_checker=jsonschema.FormatChecker())
        return {a["volumeId"]: a for a in body["volumeAttachments"]}

    def attachment(self, server, volume_id, version):
        """GET one: the validated entry, or None on 404."""
        status, body = self.request(
            "GET", f"/servers/{server}/os-volume_attachments/{volume_id}", version=version)
        if status == 404:
            return None
        assert status == 200, body
        jsonschema.validate(body, SCHEMAS[version, False],
                            format_checker=jsonschema.FormatChecker())
        return body["volumeAttachment"]

    def attach(self, server, volume_id, version="2.101"):
        status, body = self.request("POST", f"/servers/{server}/os-volume_attachments",
                                    {"volumeAttachment": {"volumeId": volume_id}},
                                    version=version)
        assert (status, body) == (202, None)

    def detach(self, server, volume_id, version="2.106"):
        return self.request("DELETE", f"/servers/{server}/os-volume_attachments/{volume_id}",
                            version=version)


@contextlib.contextmanager
def _deployment(tmp_path, overrides=None):
    """A stack with one ACTIVE server and its API on a socket (stopped after)."""
    stack = Stack(tmp_path, conf_overrides=overrides)
    http_ = None
    try:
        server = stack.boot(stack.context(), BLANK_ROOT)
        stack.wait_instance(server, "active")
        http_ = Http(stack.app)
        yield stack, server, http_
    finally:
        if http_ is not None:
            http_.close()
        stack.stop()


@pytest.fixture
def deployed(tmp_path):
    with _deployment(tmp_path) as deployment:
        yield deployment


def _volume(stack):
    return stack.cinder.create(stack.context(), 1, "data", "")["id"]


def _wait_status(stack, http_, server, volume_id, status):
    """Poll GET-one at 2.106 until the entry has ``status``; return it."""
    def check():
        entry = http_.attachment(server, volume_id, "2.106")
        return entry if entry and entry["status"] == status else None
    return stack.wait(check, what=f"{volume_id} {status}")


def _cinder_status(stack, volume_id):
    return stack.cinder.get(None, volume_id)["status"]


def test_2_105_has_no_status_and_2_106_shows_attaching_then_attached(deployed):
    stack, server, http_ = deployed
    volume = _volume(stack)
    # Hold the attach after the disk is in the guest, before Cinder completes it.
    release = threading.Event()
    complete = stack.cinder.attachment_complete

    def held_complete(context, attachment_id):
        release.wait(10)
        return complete(context, attachment_id)

    stack.cinder.attachment_complete = held_complete
    http_.attach(server, volume)
    entry = stack.wait(lambda: http_.attachments(server, "2.106").get(volume),
                       what="reserved attachment listed")
    assert entry["status"] == "attaching" and "fault" not in entry
    assert _cinder_status(stack, volume) != "in-use"
    assert http_.attachment(server, volume, "2.106")["status"] == "attaching"
    assert "status" not in http_.attachments(server, "2.105")[volume]
    release.set()
    _wait_status(stack, http_, server, volume, "attached")
    # attached is only ever reported once Cinder says in-use.
    assert _cinder_status(stack, volume) == "in-use"
    assert [c for c in stack.cinder.calls if c[0] == "attachment_complete"]
    shown = http_.attachment(server, volume, "2.105")
    assert set(shown) == set(ATTACHMENT_2_105["properties"])
    attach_end = stack.wait(lambda: stack.notifier.of("instance.volume_attach.end"),
                            what="end notification")[-1]
    assert attach_end["nova_object.data"]["volume_id"] == volume


def test_a_refused_attach_is_an_error_entry_at_2_106_only(deployed):
    stack, server, http_ = deployed
    volume = _volume(stack)
    stack.cinder.fail_next("attachment_update", exception.Invalid(
        reason="attachment update refused by the backend"))
    http_.attach(server, volume)
    entry = _wait_status(stack, http_, server, volume, "error")
    assert http_.attachments(server, "2.106")[volume] == entry
    assert entry["fault"]["code"] == 400
    assert "attachment update refused by the backend" in entry["fault"]["message"]
    assert http_.attachment(server, volume, "2.106")["fault"] == entry["fault"]
    # Below 2.106 nothing changes: the failed attach is simply not there.
    assert volume not in http_.attachments(server, "2.105")
    assert http_.attachment(server, volume, "2.105") is None
    assert http_.detach(server, volume, version="2.105")[0] == 404
    # No Cinder attachment is held, and the reason is the instance action's.
    assert _cinder_status(stack, volume) == "available"
    assert not [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume]
    error = stack.wait(lambda: stack.notifier.of("instance.volume_attach.error"),
                       what="error notification")[-1]
    assert error["nova_object.data"]["volume_id"] == volume
    assert error["nova_object.data"]["fault"]["nova_object.name"] == "ExceptionPayload"
    status, actions = http_.request("GET", f"/servers/{server}/os-instance-actions",
                                    version="2.106")
    action_id = next(a["request_id"] for a in actions["instanceActions"]
                     if a["action"] == "attach_volume")
    _, action = http_.request("GET", f"/servers/{server}/os-instance-actions/{action_id}",
                              version="2.106")
    details = [e.get("details") for e in action["instanceAction"]["events"]]
    assert entry["fault"]["message"] in details
    # It never blocks a new attach of the same volume, which then replaces it.
    http_.attach(server, volume)
    _wait_status(stack, http_, server, volume, "attached")
    assert "fault" not in http_.attachments(server, "2.106")[volume]


def test_delete_of_an_error_entry_forgets_only_the_record(deployed):
    stack, server, http_ = deployed
    volume, other = _volume(stack), _volume(stack)
    http_.attach(server, other)
    stack.wait(lambda: _cinder_status(stack, other) == "in-use", what="other in-use")
    stack.cinder.fail_next("attachment_update", exception.Invalid(reason="refused"))
    http_.attach(server, volume)
    _wait_status(stack, http_, server, volume, "error")
    calls = len(stack.cinder.calls)
    assert http_.detach(server, volume) == (202, None)
    assert http_.attachment(server, volume, "2.106") is None
    assert volume not in http_.attachments(server, "2.106")
    assert len(stack.cinder.calls) == calls  # Cinder was not asked anything
    assert http_.attachments(server, "2.106")[other]["status"] == "attached"
    assert http_.detach(server, volume)[0] == 404


def test_an_error_entry_disappears_after_the_ttl(tmp_path):
    with _deployment(tmp_path, {("api", "failed_attachment_ttl"): 2}) as (stack, server, http_):
        volume = _volume(stack)
        stack.cinder.fail_next("attachment_update", exception.Invalid(reason="refused"))
        http_.attach(server, volume)
        _wait_status(stack, http_, server, volume, "error")
        assert http_.attachments(server, "2.106")[volume]["status"] == "error"
        time.sleep(2.2)
        assert volume not in http_.attachments(server, "2.106")
        assert http_.attachment(server, volume, "2.106") is None


def test_detach_shows_detaching_and_a_failed_one_attached_with_a_fault(deployed):
    stack, server, http_ = deployed
    volume = _volume(stack)
    http_.attach(server, volume)
    _wait_status(stack, http_, server, volume, "attached")
    driver = stack.computes["fn-compute"].manager.driver
    detach = driver.detach_volume
    release = threading.Event()

    def failing_detach(*args, **kwargs):
        release.wait(10)
        raise exception.VirtDriverError(reason="the guest did not let go of the disk")

    driver.detach_volume = failing_detach
    assert http_.detach(server, volume) == (202, None)
    assert http_.attachment(server, volume, "2.106")["status"] == "detaching"
    release.set()
    entry = stack.wait(lambda: (lambda e: e if "fault" in e else None)(
        http_.attachment(server, volume, "2.106")), what="failed detach reported")
    assert entry["status"] == "attached"
    assert "did not let go of the disk" in entry["fault"]["message"]
    assert _cinder_status(stack, volume) == "in-use"
    assert "fault" not in http_.attachment(server, volume, "2.105")

    driver.detach_volume = detach
    assert http_.detach(server, volume) == (202, None)
    stack.wait(lambda: http_.attachment(server, volume, "2.106") is None, what="gone")
    assert _cinder_status(stack, volume) == "available"




def test_a_detach_accepted_before_the_attach_reported_is_not_overwritten(deployed):
    """The compute's late ``attached`` only replaces ``attaching`` (a compare and swap)."""
    stack, server, http_ = deployed
    volume = _volume(stack)
    release = threading.Event()
    attached = threading.Event()
    update = stack.conductor_api().bdm_update
    manager = stack.computes["fn-compute"].manager
    conductor = manager.attacher.conductor

    class HeldConductor:
        """The compute's conductor client, holding the ``attached`` report."""

        def __getattr__(self, name):
            return getattr(conductor, name)

        def bdm_update(self, context, *, bdm_uuid, values, **kwargs):
            if values.get("attach_status") == "attached" and "fault_code" not in values:
                attached.set()
                release.wait(10)
            return update(context, bdm_uuid=bdm_uuid, values=values, **kwargs)

    manager.attacher.conductor = HeldConductor()
    http_.attach(server, volume)
    assert attached.wait(10)
    assert _cinder_status(stack, volume) == "in-use"
    driver = manager.driver
    driver.detach_volume = lambda *a, **k: (_ for _ in ()).throw(
        exception.VirtDriverError(reason="held"))
    assert http_.detach(server, volume) == (202, None)
    assert http_.attachment(server, volume, "2.106")["status"] == "detaching"
    release.set()
    entry = stack.wait(lambda: (lambda e: e if "fault" in e else None)(
        http_.attachment(server, volume, "2.106")), what="failed detach reported")
    assert entry["status"] == "attached" and "held" in entry["fault"]["message"]


def test_an_attach_refused_before_a_device_was_reserved_is_an_error_entry(deployed):
    """The conductor's refusal (a capability the compute lacks) is kept too, with no device."""
    stack, server, http_ = deployed
    stack.computes["fn-compute"].manager.driver.capabilities[
        "supports_tagged_attach_volume"] = False
    # The conductor reads the capabilities off the compute's service record.
    stack.computes["fn-compute"].report_state()
    volume = _volume(stack)
    status, body = http_.request("POST", f"/servers/{server}/os-volume_attachments",
                                 {"volumeAttachment": {"volumeId": volume, "tag": "t"}},
                                 version="2.106")
    assert (status, body) == (202, None)
    entry = _wait_status(stack, http_, server, volume, "error")
    assert "device" not in entry and entry["attachment_id"] is None
    assert entry["fault"]["message"] == (
        "Tagged volume attachment is not supported for this instance's compute host.")
    assert volume not in http_.attachments(server, "2.105")
