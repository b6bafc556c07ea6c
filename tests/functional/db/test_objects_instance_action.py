"""Instance actions and events on every backend."""

import pytest

from volumesvc import exception
from volumesvc.objects import instance, instance_action


@pytest.fixture
def inst(db, ctx):
    return instance.create(db, ctx, {"project_id": "p1"})


def _start(db, ctx, inst, request_id="req-1", action="attach_volume"):
    return instance_action.action_start(db, ctx, inst.uuid, action, request_id, "u1", "p1")


def test_action_with_successful_event(db, ctx, inst):
    action = _start(db, ctx, inst)
    assert action.start_time is not None and action.finish_time is None
    instance_action.event_start(db, ctx, inst.uuid, "req-1", "compute_attach_volume", "host1")
    event = instance_action.event_finish(db, ctx, inst.uuid, "req-1", "compute_attach_volume")
    assert event.result == "Success" and event.finish_time is not None
    got = instance_action.get_action(db, ctx, inst.uuid, "req-1")
    assert got.message is None and got.finish_time is not None
    assert [(e.event, e.host, e.result) for e in got.events] == [
        ("compute_attach_volume", "host1", "Success")]
    assert instance_action.InstanceAction.from_dict(got.to_dict()) == got


def test_error_event_marks_the_action(db, ctx, inst):
    _start(db, ctx, inst)
    instance_action.event_start(db, ctx, inst.uuid, "req-1", "conductor_attach", "c1")
    instance_action.event_finish(db, ctx, inst.uuid, "req-1", "conductor_attach",
                                 result="Error", traceback="Traceback ...", details="boom")
    got = instance_action.get_action(db, ctx, inst.uuid, "req-1")
    assert got.message == "Error"
    assert (got.events[0].traceback, got.events[0].details) == ("Traceback ...", "boom")
    with pytest.raises(exception.Invalid):
        instance_action.event_finish(db, ctx, inst.uuid, "req-1", "conductor_attach",
                                     result="Maybe")


def test_list_and_finish(db, ctx, inst):
    _start(db, ctx, inst, "req-1", "create")
    _start(db, ctx, inst, "req-2", "attach_volume")
    finished = instance_action.action_finish(db, ctx, inst.uuid, "req-2")
    assert finished.finish_time is not None
    actions = instance_action.list_actions(db, ctx, inst.uuid)
    assert [a.request_id for a in actions] == ["req-2", "req-1"]
    assert all(a.events == [] for a in actions)


def test_missing_action_or_event(db, ctx, inst):
    with pytest.raises(exception.InstanceActionNotFound):
        instance_action.get_action(db, ctx, inst.uuid, "nope")
    with pytest.raises(exception.InstanceActionNotFound):
        instance_action.event_start(db, ctx, inst.uuid, "nope", "e", "h")
    _start(db, ctx, inst)
    with pytest.raises(exception.InstanceActionEventNotFound):
        instance_action.event_finish(db, ctx, inst.uuid, "req-1", "never_started")


def test_action_start_with_its_first_event(db, ctx, inst):
    """One write records the action and starts an event on it (the attach's compute event)."""
    action = instance_action.action_start(db, ctx, inst.uuid, "attach_volume", "req-9", "u",
                                          "p1", event="compute_attach_volume", host="h1")
    assert [(e.event, e.host, e.result) for e in action.events] == [
        ("compute_attach_volume", "h1", None)]
    instance_action.event_finish(db, ctx, inst.uuid, "req-9", "compute_attach_volume")
    got = instance_action.get_action(db, ctx, inst.uuid, "req-9")
    assert [(e.event, e.result) for e in got.events] == [("compute_attach_volume", "Success")]
    assert got.events[0].start_time == action.start_time and got.finish_time


def test_event_finish_looks_only_at_the_latest_action_of_the_request(db, ctx, inst):
    """One joined SELECT, same answers: the newest action's newest such event, else NotFound."""
    with pytest.raises(exception.InstanceActionNotFound):
        instance_action.event_finish(db, ctx, inst.uuid, "req-x", "e1")
    instance_action.action_start(db, ctx, inst.uuid, "attach_volume", "req-x", "u", "p1")
    instance_action.event_start(db, ctx, inst.uuid, "req-x", "e1")
    instance_action.event_start(db, ctx, inst.uuid, "req-x", "e1")
    done = instance_action.event_finish(db, ctx, inst.uuid, "req-x", "e1", result="Error")
    events = instance_action.get_action(db, ctx, inst.uuid, "req-x").events
    assert [e.result for e in events] == [None, "Error"] and done.id == events[1].id
    assert instance_action.get_action(db, ctx, inst.uuid, "req-x").message == "Error"
    instance_action.action_start(db, ctx, inst.uuid, "attach_volume", "req-x", "u", "p1")
    with pytest.raises(exception.InstanceActionEventNotFound):
        instance_action.event_finish(db, ctx, inst.uuid, "req-x", "e1")
