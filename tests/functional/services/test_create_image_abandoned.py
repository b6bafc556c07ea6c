"""A createImage whose API process dies between Cinder's snapshots and Glance's image.

The kill matrix's ``createImage`` cells (doc/source/contributor/kill-matrix.rst)
found that an API killed there left the snapshots for ever (no image names
them, and they keep their volumes from being deleted) and the
``api_snapshot_instance`` event in progress for ever. Here the API's
request "dies" the functional way (``tests/functional/killing.py``: a
``BaseException`` no handler catches, so nothing of the request runs any
more) and the conductors' cleanup has to settle it on its own.
"""

import pytest

from tests.functional import killing
from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc import context as vs_context
from volumesvc.volume import snapshots as volume_snapshots

ALICE = "alice:p1"


@pytest.fixture
def stack(tmp_path):
    """The conductors' cleanup every second; a createImage is abandoned after one."""
    s = Stack(tmp_path, conf_overrides={
        ("conductor", "abandoned_snapshot_cleanup_interval"): 1,
        ("conductor", "create_image_grace"): 1})
    yield s
    s.stop()


def _server(stack):
    _, body, _ = stack.api("POST", "/servers", {"server": {
        "name": "s", "flavorRef": "1", "block_device_mapping_v2": BLANK_ROOT}},
        token=ALICE, status=202)
    server_id = body["server"]["id"]
    stack.wait_for_server_status(server_id, "ACTIVE")
    return server_id


def _create_image(stack, server_id, name="img"):
    return stack.api("POST", f"/servers/{server_id}/action", {"createImage": {"name": name}},
                     token=ALICE, version="2.45")


def _create_image_events(stack, server_id):
    """The createImage actions' events as the API shows them (2.51: with their results)."""
    _, body, _ = stack.api("GET", f"/servers/{server_id}/os-instance-actions", version="2.51")
    events = []
    for action in body["instanceActions"]:
        if action["action"] != "createImage":
            continue
        _, shown, _ = stack.api(
            "GET", f"/servers/{server_id}/os-instance-actions/{action['request_id']}",
            version="2.51")
        events.extend(shown["instanceAction"]["events"])
    return events


def _killed_in_glance(stack, monkeypatch, *, after_the_image):
    """A server whose createImage's API process died in Glance's image create.

    Before Glance made the image, or once it did (only the answer lost).
    """
    server_id = _server(stack)
    create = stack.glance.create

    def die(*args, **kwargs):
        if after_the_image:
            create(*args, **kwargs)
        raise killing.Killed()
    monkeypatch.setattr(stack.glance, "create", die)
    with pytest.raises(killing.Killed):
        _create_image(stack, server_id)
    monkeypatch.undo()
    return server_id


def test_snapshots_of_an_api_killed_before_the_image_are_deleted(stack, monkeypatch):
    server_id = _killed_in_glance(stack, monkeypatch, after_the_image=False)
    assert len(stack.cinder.snapshots) == 1

    stack.wait(lambda: not stack.cinder.snapshots, timeout=20,
               what="the dead request's snapshot deleted by the conductors")
    (event,) = _create_image_events(stack, server_id)
    assert event["result"] == "Error" and event["finish_time"], event
    assert stack.glance.images == {}

    # A second createImage works, and its snapshot stays (an image names it).
    status, body, _ = _create_image(stack, server_id, "again")
    assert status == 202, body
    image = stack.glance.images[body["image_id"]]
    (snapshot,) = stack.cinder.snapshots.values()
    assert snapshot["id"] in image["block_device_mapping"]
    stack.wait(lambda: not stack.cinder.snapshots[snapshot["id"]]["metadata"], timeout=20,
               what="the successful request's marks taken off its snapshot")
    assert stack.cinder.snapshots.keys() == {snapshot["id"]}


def test_an_image_made_before_the_api_died_keeps_its_snapshots(stack, monkeypatch):
    server_id = _killed_in_glance(stack, monkeypatch, after_the_image=True)

    def ended():
        events = _create_image_events(stack, server_id)
        return events if events[0]["finish_time"] else None
    (event,) = stack.wait(ended, timeout=20, what="the dead request's event ended")
    assert event["result"] == "Success", event
    (image,) = stack.glance.images.values()
    (snapshot,) = stack.cinder.snapshots.values()
    assert image["status"] == "active" and snapshot["id"] in image["block_device_mapping"]
    stack.wait(lambda: not stack.cinder.snapshots[snapshot["id"]]["metadata"], timeout=20,
               what="the request's marks taken off its snapshot")


def test_a_request_slower_than_the_grace_undoes_its_image(stack, monkeypatch):
    """The conductors ended it as abandoned while it waited on Glance: it lost the race."""
    server_id = _server(stack)
    create = stack.glance.create

    def slow(*args, **kwargs):
        stack.wait(lambda: _create_image_events(stack, server_id)[0]["finish_time"],
                   timeout=20, what="the conductors ending the slow request")
        return create(*args, **kwargs)
    monkeypatch.setattr(stack.glance, "create", slow)
    status, body, _ = _create_image(stack, server_id)
    assert status == 503, body
    (fault,) = body.values()
    assert fault["code"] == 503 and "create_image_grace" in fault["message"], body
    monkeypatch.undo()
    assert stack.glance.images == {}
    stack.wait(lambda: not stack.cinder.snapshots, timeout=20,
               what="the abandoned request's snapshot deleted")
    (event,) = _create_image_events(stack, server_id)
    assert event["result"] == "Error"


@pytest.mark.parametrize("image_made", [False, True], ids=["no-image", "active-image"])
def test_marked_snapshots_of_a_request_with_no_record_follow_its_image(stack, image_made):
    """The request's action is gone (archived): its image alone says whether they are needed."""
    ctx = vs_context.get_admin_context()
    volume = stack.cinder.create(ctx, 1, "v", "")
    server_id, request_id = "5e1f0000-0000-4000-8000-000000000001", "req-archived"
    snapshot = stack.cinder.create_snapshot_force(
        ctx, volume["id"], metadata=volume_snapshots.image_request_marks(server_id, request_id))
    if image_made:
        stack.glance.create(ctx, name="img", owner="p1", image_id=volume_snapshots.image_id_for(
            server_id, request_id))
        stack.wait(lambda: not stack.cinder.snapshots[snapshot["id"]]["metadata"], timeout=20,
                   what="the marks taken off the snapshot its image names")
    else:
        stack.wait(lambda: not stack.cinder.snapshots, timeout=20,
                   what="the snapshot no image names deleted")
