"""Moves whose conductor died in their middle: driven again, or recorded all the same.

The API's cast of each move is dropped, as when the conductor that took it
from the bus is SIGKILLed before its own cast: nothing but the migration row
is left. With ``[conductor] move_request_grace`` at 1 s the conductors'
periodic task (every second here) drives each move again from its row, and
it ends as if the first cast had gone through. The first cast arriving late
afterwards changes nothing. And a conductor killed with the write that
records a moved guest in hand (carried out, its reply lost): the compute
asks again, reads the records when the repetition is refused, and goes
on; before, it undid a move whose guest had already moved.
"""

import logging

import pytest

from tests.functional import moves
from tests.functional.stack import Stack
from volumesvc.compute import rpcapi as compute_rpcapi
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.objects import service as service_obj
from volumesvc.states import power_state

SRC, DST = "sm-src", "sm-dst"
QUICK = {("conductor", "move_request_grace"): 1,
         ("conductor", "volume_request_recovery_interval"): 1}


@pytest.fixture(autouse=True)
def _info(caplog):
    caplog.set_level(logging.INFO)


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC, DST), conf_overrides=QUICK)
    yield stack
    stack.stop()


def _dropped(monkeypatch, cls, method):
    """Drop every call of ``cls.method`` (a cast) until the returned ``release()``.

    ``release()`` puts the method back and returns the dropped calls, each
    ``(args, kwargs)``, for a test to deliver late.
    """
    real = getattr(cls, method)
    calls = []
    monkeypatch.setattr(cls, method, lambda self, *a, **k: calls.append((self, a, k)))

    def release():
        monkeypatch.setattr(cls, method, real)
        return [(lambda c=c: real(c[0], *c[1], **c[2])) for c in calls]
    release.calls = calls
    return release


def _migration(stack, server, migration_type):
    (migration,) = [m for m in migration_obj.list_for_instance(
        stack.db, stack.admin_context(), server) if m.migration_type == migration_type]
    return migration


def _settled(stack, server, migration_type, statuses):
    return stack.wait(lambda: (lambda m: m if m.status in statuses else None)(
        _migration(stack, server, migration_type)), timeout=30,
        what=f"the {migration_type} driven again")


def _events_ended(stack, server, action_name):
    """{event: result} of the server's ``action_name`` action once each event has ended:
    the compute is done with the move, whatever it did after the records said so."""
    ctx = stack.admin_context()

    def ended():
        (action,) = [a for a in action_obj.list_actions(stack.db, ctx, server)
                     if a.action == action_name]
        events = action_obj.get_action(stack.db, ctx, server, action.request_id).events
        return ({e.event: e.result for e in events}
                if events and all(e.result for e in events) else None)
    return stack.wait(ended, what=f"the {action_name} action's events")


def _instance(stack, server):
    return instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)


def _one_attachment_each(stack, server, host, running=True):
    """Each of the two volumes attached once, to ``host``; the domain there (running)."""
    attachments = moves.attachments(stack, server)
    assert sorted(attachments.values()) == [host, host], attachments
    assert moves.domains(stack, host) == {server}
    if running:
        state = stack.computes[host].manager.driver.get_info({"uuid": server})
        assert state == power_state.RUNNING


def test_a_live_migration_whose_conductor_died_is_driven_again(stack, monkeypatch, caplog):
    server = moves.boot(stack, SRC)
    moves.attach_new(stack, server)
    release = _dropped(monkeypatch, conductor_rpcapi.ConductorAPI, "live_migrate_instance")
    stack.api("POST", f"/servers/{server}/action",
              {"os-migrateLive": {"host": DST, "block_migration": "auto"}}, version="2.68",
              status=202)
    assert _migration(stack, server, "live-migration").status == "accepted"
    assert _settled(stack, server, "live-migration",
                    ("completed", "error")).status == "completed"
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state) == (DST, None)
    _one_attachment_each(stack, server, DST)
    assert moves.domains(stack, SRC) == set()
    # The lost cast arriving now finds the move taken: nothing changes.
    for late in release():
        late()
    stack.wait(lambda: "is another run's" in caplog.text, what="the late cast handled")
    assert _migration(stack, server, "live-migration").status == "completed"
    assert _instance(stack, server).host == DST
    _one_attachment_each(stack, server, DST)


def test_a_live_migration_whose_cast_to_the_source_was_lost_is_cast_again(stack,
                                                                          monkeypatch,
                                                                          caplog):
    server = moves.boot(stack, SRC)
    release = _dropped(monkeypatch, compute_rpcapi.ComputeAPI, "live_migration")
    stack.api("POST", f"/servers/{server}/action",
              {"os-migrateLive": {"host": DST, "block_migration": "auto"}}, version="2.68",
              status=202)
    stack.wait(lambda: release.calls, what="the conductor's cast to the source")
    late = release()
    assert len(late) == 1
    assert _settled(stack, server, "live-migration",
                    ("completed", "error")).status == "completed"
    assert _instance(stack, server).host == DST
    # The first cast, late: the source finds the move no longer queued.
    for call in late:
        call()
    stack.wait(lambda: "not taken" in caplog.text, what="the late cast handled")
    assert _migration(stack, server, "live-migration").status == "completed"
    assert moves.domains(stack, DST) == {server}


def test_a_cold_migration_whose_conductor_died_is_driven_again(stack, monkeypatch):
    server = moves.boot(stack, SRC)
    moves.attach_new(stack, server)
    _dropped(monkeypatch, conductor_rpcapi.ConductorAPI, "resize_instance")
    stack.api("POST", f"/servers/{server}/action", {"migrate": {"host": DST}},
              version="2.56", status=202)
    assert _settled(stack, server, "migration", ("finished", "error")).status == "finished"
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "resized", None)
    _one_attachment_each(stack, server, DST)


def _host_dies(stack, host):
    stack.computes.pop(host).stop()
    ctx = stack.admin_context()
    service = service_obj.get_by_host_and_binary(stack.db, ctx, host, "volumesvc-compute")
    service_obj.update(stack.db, ctx, service.uuid, forced_down=True)


@pytest.mark.parametrize("lost", ["conductor", "destination"])
def test_an_evacuation_whose_cast_was_lost_is_driven_again_and_keeps_its_options(
        stack, monkeypatch, lost):
    """At 2.95 an evacuated server stays stopped: the option survives the re-drive."""
    server = moves.boot(stack, SRC)
    moves.attach_new(stack, server)
    _host_dies(stack, SRC)
    if lost == "conductor":
        release = _dropped(monkeypatch, conductor_rpcapi.ConductorAPI, "evacuate_instance")
    else:
        release = _dropped(monkeypatch, compute_rpcapi.ComputeAPI, "evacuate_instance")
    stack.api("POST", f"/servers/{server}/action", {"evacuate": {"host": DST}},
              version="2.95", status=200)
    if lost == "destination":
        stack.wait(lambda: release.calls, what="the conductor's cast to the destination")
        release()
    assert _settled(stack, server, "evacuation", ("done", "failed", "error")).status == "done"
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "stopped", None)
    _one_attachment_each(stack, server, DST, running=False)


# -- a conductor killed with the move's last write in hand ----------------------

def _reply_lost(monkeypatch, cls, method, nth=1):
    """The ``nth`` call of ``cls.method`` is carried out, then its reply is lost
    (its conductor died after the commit): the caller gets ``MessagingTimeout``."""
    import oslo_messaging as messaging

    real = getattr(cls, method)
    calls = []
    lost = []

    def once(self, *args, **kwargs):
        answer = real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == nth:
            lost.append(answer)
            raise messaging.MessagingTimeout("the conductor died before it answered")
        return answer
    monkeypatch.setattr(cls, method, once)
    return lost


# (method, which call of it): the source's take and its ``running``, the
# source's reading of the BDMs, the destination's record of an attachment,
# the switch once the guest has moved.
@pytest.mark.parametrize("method, nth", [
    ("migration_update", 1), ("migration_update", 2), ("bdm_list", 1),
    ("migration_add_dest_attachment", 1), ("live_migration_switch", 1)],
    ids=["take", "running", "bdms", "dest-attachment", "switch"])
def test_a_live_migration_whose_conductor_call_lost_its_reply_completes(stack, monkeypatch,
                                                                        method, nth):
    """Regression (every conductor SIGKILLed mid-move on the cluster): the source took
    a lost answer as a failure. Before the guest left, the move stayed ``preparing``
    for good (the BDMs' read was outside the rollback); after it, the move stayed
    ``running`` with the server on the source's records."""
    server = moves.boot(stack, SRC)
    moves.attach_new(stack, server)
    lost = _reply_lost(monkeypatch, conductor_rpcapi.ConductorAPI, method, nth)
    stack.api("POST", f"/servers/{server}/action",
              {"os-migrateLive": {"host": DST, "block_migration": "auto"}}, version="2.68",
              status=202)
    assert _settled(stack, server, "live-migration",
                    ("completed", "error")).status == "completed"
    assert lost
    assert set(_events_ended(stack, server, "live-migration").values()) == {"Success"}
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state) == (DST, None)
    _one_attachment_each(stack, server, DST)
    assert moves.domains(stack, SRC) == set()


# (method, which call of it): the source's take, its task, its settle (it
# let go); the destination's task, its settle (it started the guest).
@pytest.mark.parametrize("method, nth", [
    ("migration_update", 1), ("instance_update", 1), ("bdm_list", 1), ("bdm_update", 1),
    ("migration_settle", 1), ("instance_update", 2), ("migration_settle", 2)],
    ids=["source-take", "source-task", "source-bdms", "source-switch", "source-settle",
         "dest-task", "dest-settle"])
def test_a_cold_migration_whose_conductor_call_lost_its_reply_goes_on(stack, monkeypatch,
                                                                      method, nth):
    """Regression: a lost answer before the source's work left the move for good in
    ``migrating`` (nothing but a restart of the source would look at it again), one
    after a settle undid a step the records said was done."""
    server = moves.boot(stack, SRC)
    moves.attach_new(stack, server)
    lost = _reply_lost(monkeypatch, conductor_rpcapi.ConductorAPI, method, nth)
    stack.api("POST", f"/servers/{server}/action", {"migrate": {"host": DST}},
              version="2.56", status=202)
    assert _settled(stack, server, "migration", ("finished", "error")).status == "finished"
    assert lost
    assert set(_events_ended(stack, server, "migrate").values()) == {"Success"}
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "resized", None)
    _one_attachment_each(stack, server, DST)


@pytest.mark.parametrize("method", ["migration_update", "migration_add_dest_attachment",
                                    "bdm_update", "evacuation_finish"])
def test_an_evacuation_whose_conductor_call_lost_its_reply_goes_through(stack, monkeypatch,
                                                                       method):
    """Regression (a conductor SIGKILLed mid-evacuation on the cluster): one of the
    destination's calls was carried out and its answer lost; the evacuation failed and
    left the server ``ERROR`` on the dead host, and after a lost finish the guest was
    destroyed although the records said the evacuation was done. The call is asked
    again (the records decide when its repetition is refused)."""
    server = moves.boot(stack, SRC)
    moves.attach_new(stack, server)
    _host_dies(stack, SRC)
    lost = _reply_lost(monkeypatch, conductor_rpcapi.ConductorAPI, method)
    stack.api("POST", f"/servers/{server}/action", {"evacuate": {"host": DST}},
              version="2.68", status=200)
    assert _settled(stack, server, "evacuation", ("done", "failed", "error")).status == "done"
    assert lost
    assert set(_events_ended(stack, server, "evacuate").values()) == {"Success"}
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "active", None)
    _one_attachment_each(stack, server, DST)
