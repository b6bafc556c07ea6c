"""Accepted 2.101 attaches and detaches are not lost with their conductor or their cast.

The whole service in one process (fake://): the API records each accepted
request, the conductor claims and settles it, and the recovery task (every
second here, with a one-second grace) re-runs what nobody owns. A lost cast
is a conductor client that swallows it; a dead conductor is a claim by a
host whose conductor service is gone.
"""

import datetime
import threading
from concurrent import futures

import pytest
import sqlalchemy as sa

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.db import models
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import volume_request as request_obj

TOKEN = "u1:p1"
RECOVERY = {("conductor", "volume_request_recovery_interval"): 1,
            ("conductor", "volume_request_grace"): 1}


@pytest.fixture
def stack(tmp_path):
    """The functional stack with recovery every second (``server`` boots on it)."""
    s = Stack(tmp_path, conf_overrides=RECOVERY)
    yield s
    s.stop()


@pytest.fixture
def lose_casts(monkeypatch):
    """Make the API's next ``n`` casts of ``method`` vanish; returns the setter."""
    def lose(method, n=1):
        real = getattr(conductor_rpcapi.ConductorAPI, method)
        left = [n]

        def swallowing(self, ctxt, **kwargs):
            if left[0] > 0:
                left[0] -= 1
                return None
            return real(self, ctxt, **kwargs)
        monkeypatch.setattr(conductor_rpcapi.ConductorAPI, method, swallowing)
    return lose


def _path(server, volume_id=None):
    path = f"/servers/{server}/os-volume_attachments"
    return f"{path}/{volume_id}" if volume_id else path


def _rows(stack):
    with stack.db.reader(stack.admin_context()) as session:
        return session.scalars(sa.select(models.VolumeRequest)).all()


def _volume(stack):
    return stack.cinder.create(stack.context(), 1, "data", "")["id"]


def _attach(stack, server, volume_id, version="2.101"):
    return stack.api("POST", _path(server), {"volumeAttachment": {"volumeId": volume_id}},
                     version=version, token=TOKEN)


def _attached_once(stack, server, volume_id):
    """In use, with exactly one BDM, one Cinder attachment and one disk in the domain."""
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use" and not
               _rows(stack), timeout=20, what=f"{volume_id} in-use and its request settled")
    stack.wait(lambda: all(b.connection_info for b in _bdms(stack, server, volume_id)),
               what="the attach reported")
    (bdm,) = _bdms(stack, server, volume_id)
    (attachment,) = [a for a in stack.cinder.attachments.values()
                     if a["volume_id"] == volume_id]
    assert bdm.attachment_id == attachment["id"] and attachment["status"] == "attached"
    xml = stack.computes["fn-compute"].manager.driver.get_domain_xml({"uuid": server})
    assert xml.count(f"<serial>{volume_id}</serial>") == 1
    return bdm


def _shown_status(stack, server, volume_id):
    """The attachment's 2.106 status as the API shows it (None: not shown)."""
    _, shown, _ = stack.api("GET", _path(server, volume_id), version="2.106", token=TOKEN)
    return (shown or {}).get("volumeAttachment", {}).get("status")


def _bdms(stack, server, volume_id):
    return [b for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)
            if b.volume_id == volume_id]


def test_an_accepted_attach_whose_cast_is_lost_still_attaches(stack, server, lose_casts):
    lose_casts("attach_volume")
    volume_id = _volume(stack)
    status, _, _ = _attach(stack, server, volume_id)
    assert status == 202
    (row,) = _rows(stack)
    assert (row.kind, row.volume_id, row.claimed_by) == ("attach", volume_id, None)
    _attached_once(stack, server, volume_id)
    stack.wait(lambda: _shown_status(stack, server, volume_id) == "attached",
               what="shown attached (2.106)")


def test_an_attach_whose_conductor_died_after_the_cinder_attachment_is_finished(
        stack, server, lose_casts):
    """The dead conductor had claimed the request and made the Cinder attachment, no BDM."""
    lose_casts("attach_volume")
    volume_id = _volume(stack)
    _attach(stack, server, volume_id)
    (row,) = _rows(stack)
    ctx = stack.admin_context()
    request_obj.claim(stack.db, ctx, row.uuid, "conductor-that-died")
    orphan = stack.cinder.attachment_create(ctx, volume_id, server)
    bdm = _attached_once(stack, server, volume_id)
    assert bdm.attachment_id != orphan["id"] and orphan["id"] not in stack.cinder.attachments


def test_a_duplicate_delivery_attaches_once(stack, server, monkeypatch):
    real = conductor_rpcapi.ConductorAPI.attach_volume

    def twice(self, ctxt, **kwargs):
        real(self, ctxt, **kwargs)
        return real(self, ctxt, **kwargs)
    monkeypatch.setattr(conductor_rpcapi.ConductorAPI, "attach_volume", twice)
    volume_id = _volume(stack)
    assert _attach(stack, server, volume_id)[0] == 202
    _attached_once(stack, server, volume_id)


def test_a_compute_told_twice_attaches_once(stack, server, monkeypatch):
    real = compute_rpcapi.ComputeAPI.attach_volume

    def twice(self, ctxt, **kwargs):
        real(self, ctxt, **kwargs)
        return real(self, ctxt, **dict(kwargs, recovered=True))
    monkeypatch.setattr(compute_rpcapi.ComputeAPI, "attach_volume", twice)
    volume_id = _volume(stack)
    _attach(stack, server, volume_id)
    _attached_once(stack, server, volume_id)
    _, actions, _ = stack.api("GET", f"/servers/{server}/os-instance-actions", token=TOKEN,
                              status=200)
    assert [a["action"] for a in actions["instanceActions"]].count("attach_volume") == 1


def test_a_failed_attach_forgets_its_request(stack, server):
    from volumesvc import exception

    stack.cinder.fail_next("attachment_create", exception.Invalid(reason="no room"))
    volume_id = _volume(stack)
    assert _attach(stack, server, volume_id)[0] == 202

    stack.wait(lambda: _shown_status(stack, server, volume_id) == "error",
               what="the failed attach shown")
    stack.wait(lambda: not _rows(stack), what="its request forgotten")
    assert stack.cinder.get(None, volume_id)["status"] == "available"


def test_below_2_101_nothing_is_recorded(stack, server):
    volume_id = _volume(stack)
    assert _attach(stack, server, volume_id, version="2.100")[0] == 200
    assert _rows(stack) == []


def _post_at_once(stack, path, body, version, count):
    """``count`` threads POST ``body`` together, each with its own client; their answers."""
    start = threading.Barrier(count)

    def post(_):
        client = stack.app.test_client()
        start.wait()
        resp = client.post(f"/v2.1{path}", json=body, headers={
            "X-Auth-Token": TOKEN, "OpenStack-API-Version": f"compute {version}"})
        return resp.status_code, resp.json if resp.data else None

    with futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(post, range(count)))


@pytest.mark.parametrize("hint", [{}, {"device": "/dev/vdb"}], ids=["no-hint", "device-hint"])
def test_concurrent_identical_attaches_at_2_107_attach_once(stack, server, hint):
    """Regression: of 20 identical 2.107 attaches sent at once, those that passed the
    API's checks before any had its BDM were each cast as an attach of its own (8 here)
    and all but one failed in the conductor, each an ``attach_volume`` action in Error.

    Each answer is now the one a retry gets: 202, with no body while the accepted
    attach has not made its attachment yet, then with that attachment. With a device
    hint (which the compute does not follow: the disk is named ``/dev/sdb``) the
    requests that came after the attachment was made were the 400, as was every later
    retry of that body: the hint is now compared with what the attach asked for too.
    """
    volume_id = _volume(stack)
    answers = _post_at_once(stack, _path(server), {"volumeAttachment": dict(
        hint, volumeId=volume_id, tag="data")}, "2.107", 20)
    assert [status for status, _ in answers] == [202] * 20, answers
    for _, body in answers:
        assert body is None or (body["volumeAttachment"]["volumeId"],
                                body["volumeAttachment"]["tag"]) == (volume_id, "data"), body
    bdm = _attached_once(stack, server, volume_id)
    assert bdm.tag == "data"
    # A retry of the same body after the attach is answered with the attachment.
    _, retried, _ = stack.api("POST", _path(server), {"volumeAttachment": dict(
        hint, volumeId=volume_id, tag="data")}, version="2.107", token=TOKEN, status=202)
    assert retried["volumeAttachment"]["device"] == bdm.device_name
    assert _shown_status(stack, server, volume_id) == "attached"
    _, listed, _ = stack.api("GET", _path(server), version="2.106", token=TOKEN, status=200)
    assert [a["status"] for a in listed["volumeAttachments"]
            if a["volumeId"] == volume_id] == ["attached"]
    _, actions, _ = stack.api("GET", f"/servers/{server}/os-instance-actions", token=TOKEN,
                              status=200)
    (attach,) = [a for a in actions["instanceActions"] if a["action"] == "attach_volume"]

    def finished_events():
        _, action, _ = stack.api(
            "GET", f"/servers/{server}/os-instance-actions/{attach['request_id']}",
            status=200)
        events = [(e["event"], e["result"]) for e in action["instanceAction"]["events"]]
        return events if all(result for _, result in events) else None
    assert stack.wait(finished_events, what="the attach's events finished") == [
        ("compute_attach_volume", "Success")]
    assert "fault" not in stack.server(server)


def test_concurrent_identical_attaches_below_2_107_attach_once(stack, server):
    """Below 2.107 the others get the 400 a retry gets, instead of failing in the conductor."""
    volume_id = _volume(stack)
    answers = _post_at_once(stack, _path(server), {"volumeAttachment": {
        "volumeId": volume_id}}, "2.106", 20)
    assert sorted(status for status, _ in answers) == [202] + [400] * 19, answers
    for status, body in answers:
        assert status == 202 or body["badRequest"]["message"] == (
            f"volume {volume_id} is already attached to instances: {server}"), body
    _attached_once(stack, server, volume_id)
    _, actions, _ = stack.api("GET", f"/servers/{server}/os-instance-actions", token=TOKEN,
                              status=200)
    assert [a["action"] for a in actions["instanceActions"]].count("attach_volume") == 1


def test_an_owed_attach_is_repeated_not_run_again(tmp_path, lose_casts):
    """While an accepted attach is owed (its cast lost here) a repeat at 2.107 is that
    attach; a request that differs, or the repeat below 2.107, is the 400."""
    stack = Stack(tmp_path, conf_overrides={
        ("conductor", "volume_request_recovery_interval"): 1,
        ("conductor", "volume_request_grace"): 5})
    try:
        server = stack.boot(stack.context(), BLANK_ROOT)
        stack.wait_instance(server, "active")
        lose_casts("attach_volume")
        volume_id = _volume(stack)
        body = {"volumeAttachment": {"volumeId": volume_id, "tag": "data"}}
        assert stack.api("POST", _path(server), body, version="2.107", token=TOKEN)[:2] == (
            202, None)
        assert stack.api("POST", _path(server), body, version="2.107", token=TOKEN)[:2] == (
            202, None)
        for other, version in (({"volumeId": volume_id}, "2.107"),
                               ({"volumeId": volume_id, "tag": "data",
                                 "delete_on_termination": True}, "2.107"),
                               (body["volumeAttachment"], "2.106")):
            status, fault, _ = stack.api("POST", _path(server), {"volumeAttachment": other},
                                         version=version, token=TOKEN)
            assert (status, fault["badRequest"]["message"]) == (
                400, f"volume {volume_id} is already attached to instances: {server}")
        (row,) = _rows(stack)
        assert row.params["tag"] == "data"
        assert _attached_once(stack, server, volume_id).tag == "data"
        _, shown, _ = stack.api("POST", _path(server), body, version="2.107", token=TOKEN,
                                status=202)
        assert shown["volumeAttachment"]["status"] == "attached"
    finally:
        stack.stop()





def _attached_volume(stack, server):
    volume_id = _volume(stack)
    _attach(stack, server, volume_id, version="2.100")
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use", what="in-use")
    return volume_id


def _detached(stack, server, volume_id):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "available" and not
               _rows(stack) and not _bdms(stack, server, volume_id), timeout=20,
               what=f"{volume_id} detached and its request settled")
    assert not [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume_id]
    xml = stack.computes["fn-compute"].manager.driver.get_domain_xml({"uuid": server})
    assert volume_id not in xml


def test_an_accepted_detach_whose_cast_is_lost_still_detaches(stack, server, lose_casts):
    volume_id = _attached_volume(stack, server)
    lose_casts("detach_volume")
    stack.api("DELETE", _path(server, volume_id), version="2.101", token=TOKEN, status=202)
    (row,) = _rows(stack)
    assert row.kind == "detach" and row.params["attachment_id"]
    _detached(stack, server, volume_id)


def test_a_detach_claimed_by_a_dead_conductor_is_recovered(stack, server, lose_casts):
    volume_id = _attached_volume(stack, server)
    lose_casts("detach_volume")
    stack.api("DELETE", _path(server, volume_id), version="2.106", token=TOKEN, status=202)
    (row,) = _rows(stack)
    request_obj.claim(stack.db, stack.admin_context(), row.uuid, "conductor-that-died")
    (bdm,) = _bdms(stack, server, volume_id)
    assert bdm.attach_status == "detaching"
    assert stack.cinder.get(None, volume_id)["status"] == "detaching"
    _detached(stack, server, volume_id)


def test_a_detach_delivered_twice_detaches_once(stack, server, monkeypatch):
    volume_id = _attached_volume(stack, server)
    real = conductor_rpcapi.ConductorAPI.detach_volume

    def twice(self, ctxt, **kwargs):
        real(self, ctxt, **kwargs)
        return real(self, ctxt, **kwargs)
    monkeypatch.setattr(conductor_rpcapi.ConductorAPI, "detach_volume", twice)
    stack.api("DELETE", _path(server, volume_id), version="2.101", token=TOKEN, status=202)
    _detached(stack, server, volume_id)
    request_id = _last_request(stack, server)

    def finished_events():
        # The events are an admin's to read; the last one closes just after the detach.
        _, action, _ = stack.api("GET", f"/servers/{server}/os-instance-actions/{request_id}",
                                 status=200)
        events = [(e["event"], e["result"]) for e in action["instanceAction"]["events"]]
        return events if all(result for _, result in events) else None
    assert stack.wait(finished_events, what="the detach's events finished") == [
        ("compute_detach_volume", "Success")]


def _last_request(stack, server):
    _, actions, _ = stack.api("GET", f"/servers/{server}/os-instance-actions", token=TOKEN,
                              status=200)
    return actions["instanceActions"][0]["request_id"]


def test_a_request_that_keeps_losing_its_conductor_is_given_up(stack, server, lose_casts):
    lose_casts("attach_volume")
    volume_id = _volume(stack)
    _attach(stack, server, volume_id)
    (row,) = _rows(stack)
    request_obj.claim(stack.db, stack.admin_context(), row.uuid, "conductor-that-died")
    with stack.db.writer(stack.admin_context()) as session:
        session.execute(sa.update(models.VolumeRequest).values(
            attempts=3, claimed_at=models.utcnow() - datetime.timedelta(minutes=5)))

    stack.wait(lambda: _shown_status(stack, server, volume_id) == "error" and
               not _rows(stack), timeout=20,
               what="the given-up attach shown as failed and its request forgotten")
    assert not _bdms(stack, server, volume_id)
    assert stack.cinder.get(None, volume_id)["status"] == "available"
