"""Live migration through the real API, conductor and two computes (fake libvirt).

Each compute has its own fake libvirt daemon, so a server's domain is on
exactly one of them; FakeCinder records which host's connector each
attachment was given.
"""

import time

import pytest

from tests.functional import moves
from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.objects import service as service_obj

SRC, DST = "lm-src", "lm-dst"
_Killed = moves.Killed
_restart = moves.restart
_domains = moves.domains
_attachments = moves.attachments
_attach = moves.attach_new


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC, DST))
    yield stack
    stack.stop()


def _boot(stack, host=SRC, bdms=BLANK_ROOT):
    return moves.boot(stack, host, bdms)






def _libvirt(stack, host):
    return stack.computes[host].manager.driver.libvirt


def _migrate(stack, server, body=None, version="2.68", status=202):
    body = body or {"host": DST, "block_migration": "auto"}
    return stack.api("POST", f"/servers/{server}/action", {"os-migrateLive": body},
                     version=version, status=status)


def _migration(stack, server):
    (migration,) = migration_obj.list_for_instance(stack.db, stack.admin_context(), server)
    return migration


def _settled(stack, server, statuses=("completed", "error", "cancelled"), timeout=20):
    return stack.wait(lambda: _migration(stack, server)
                      if _migration(stack, server).status in statuses else None,
                      timeout=timeout, what="the migration to settle")


def _events(stack, server):
    """{event: result} of the server's live-migration action, once all have ended."""
    ctx = stack.admin_context()

    def finished():
        (action,) = [a for a in action_obj.list_actions(stack.db, ctx, server)
                     if a.action == "live-migration"]
        events = action_obj.get_action(stack.db, ctx, server, action.request_id).events
        return ({e.event: e.result for e in events}
                if events and all(e.result for e in events) else None)
    return stack.wait(finished, what="the live-migration action's events")




def test_a_server_moves_with_its_volumes(stack):
    server = _boot(stack)
    data = _attach(stack, server)
    before = {b.volume_id: b.attachment_id
              for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)}
    _migrate(stack, server)
    migration = _settled(stack, server)
    assert migration.status == "completed", migration
    instance = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert (instance.host, instance.node, instance.task_state, instance.vm_state) == (
        DST, DST, None, "active")
    assert server in _domains(stack, DST) and server not in _domains(stack, SRC)
    bdms = {b.volume_id: b for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(),
                                                             server)}
    assert data in bdms and len(bdms) == 2
    attachments = _attachments(stack, server)
    # One attachment per volume, each new and made with the destination's connector.
    assert set(attachments) == {b.attachment_id for b in bdms.values()}
    assert not set(attachments) & set(before.values())
    assert set(attachments.values()) == {DST}
    for volume_id in bdms:
        assert stack.cinder.get(stack.admin_context(), volume_id)["status"] == "in-use"
    # The guest's disks on the destination are the volumes, at the same devices.
    xml = stack.computes[DST].manager.driver.get_domain_xml({"uuid": server})
    assert f"<serial>{data}</serial>" in xml
    events = _events(stack, server)
    assert events.get("compute_live_migration") == "Success", events
    assert events.get("compute_pre_live_migration") == "Success", events
    body = stack.api("GET", f"/servers/{server}", version="2.68")[1]
    assert body["server"]["OS-EXT-SRV-ATTR:host"] == DST


def test_the_scheduler_picks_the_other_host(stack):
    server = _boot(stack)
    _migrate(stack, server, {"host": None, "block_migration": False,
                             "disk_over_commit": False}, version="2.1")
    assert _settled(stack, server).status == "completed"
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), server).host == DST


def test_a_failed_move_leaves_the_server_running_where_it_was(stack):
    server = _boot(stack)
    data = _attach(stack, server)
    before = _attachments(stack, server)
    _libvirt(stack, SRC).migration_error = "operation failed: migration broke"
    _migrate(stack, server)
    migration = _settled(stack, server)
    assert migration.status == "error"
    instance = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "active")
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)
    assert _attachments(stack, server) == before
    assert stack.cinder.get(stack.admin_context(), data)["status"] == "in-use"
    events = _events(stack, server)
    assert events.get("compute_live_migration") == "Error", events


def test_a_destination_that_cannot_connect_leaves_nothing(stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    before = _attachments(stack, server)
    dest = stack.computes[DST].manager.driver

    def broken(info):
        raise RuntimeError("no path to the storage")
    monkeypatch.setattr(dest, "connect_volume", broken)
    _migrate(stack, server)
    assert _settled(stack, server).status == "error"
    assert _attachments(stack, server) == before
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), server).task_state is None
    assert server in _domains(stack, SRC)


def _running(stack, server):
    return stack.wait(lambda: _migration(stack, server).status == "running",
                      what="the migration to run")


def _request(stack, server, request):
    migration = _migration(stack, server)
    migration_obj.save(stack.db, stack.admin_context(), migration.id, {"requested": request})
    stack.computes[SRC].manager.live_migration_control(
        stack.admin_context(), instance_uuid=server, migration_id=migration.id,
        request=request)


def test_an_abort_leaves_the_server_on_the_source(stack):
    server = _boot(stack)
    _attach(stack, server)
    before = _attachments(stack, server)
    _libvirt(stack, SRC).migration_seconds = 30
    _migrate(stack, server)
    _running(stack, server)
    started = time.monotonic()
    _request(stack, server, migration_obj.ABORT)
    assert _settled(stack, server).status == "cancelled"
    assert time.monotonic() - started < 10
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)
    assert _attachments(stack, server) == before


def test_force_complete_pauses_then_the_destination_resumes(stack):
    server = _boot(stack)
    _libvirt(stack, SRC).migration_seconds = 3
    _migrate(stack, server)
    _running(stack, server)
    _request(stack, server, migration_obj.FORCE_COMPLETE)
    assert _settled(stack, server).status == "completed"
    instance = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert instance.host == DST and instance.power_state == 1


def test_progress_is_recorded_while_it_runs(stack):
    server = _boot(stack)
    _libvirt(stack, SRC).migration_seconds = 5
    _migrate(stack, server)
    _running(stack, server)
    stack.wait(lambda: (_migration(stack, server).memory_total or 0) > 0,
               what="progress in the migration")
    assert _settled(stack, server).status == "completed"


def test_a_shared_volume_keeps_the_other_servers_attachment(stack):
    server = _boot(stack)
    other = _boot(stack)
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    shared = stack.cinder.create(stack.context(), 1, "shared", "", volume_type="multi")
    for s in (server, other):
        stack.attach_volume(s, shared["id"])
    stack.wait(lambda: len(stack.cinder.get(stack.admin_context(), shared["id"])
                           .get("attachments") or []) == 2, what="two attachments")
    kept = _attachments(stack, other)
    _migrate(stack, server)
    assert _settled(stack, server).status == "completed"
    assert _attachments(stack, other) == kept
    assert set(_attachments(stack, server).values()) == {DST}
    assert other in _domains(stack, SRC) and server in _domains(stack, DST)


@pytest.mark.parametrize("body,version,message", [
    ({"host": DST, "block_migration": True}, "2.68", "Block migration is not supported"),
    ({"host": SRC, "block_migration": "auto"}, "2.68", "to current host"),
    ({"host": "nowhere", "block_migration": "auto"}, "2.68", "could not be found"),
    ({"host": DST, "block_migration": "auto", "force": True}, "2.68", "force"),
    ({"host": DST, "block_migration": "auto"}, "2.1", "disk_over_commit"),
])
def test_requests_refused_up_front(stack, body, version, message):
    server = _boot(stack)
    fault = _migrate(stack, server, body, version=version, status=400)[1]
    assert message in fault["badRequest"]["message"], fault
    assert not migration_obj.list_for_instance(stack.db, stack.admin_context(), server)
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), server).task_state is None


def test_only_an_admin_may_live_migrate(stack):
    server = _boot(stack)
    stack.api("POST", f"/servers/{server}/action",
              {"os-migrateLive": {"host": DST, "block_migration": "auto"}},
              version="2.68", token="u1:p1", status=403)


def test_a_server_in_a_task_is_refused(stack):
    server = _boot(stack)
    instance_obj.save(stack.db, stack.admin_context(), server, {"task_state": "rebooting"})
    _migrate(stack, server, status=409)


def test_no_other_host_is_refused_after_the_answer(stack):
    """The scheduler's refusal comes after the 202: in the migration and the actions."""
    server = _boot(stack)
    ctx = stack.admin_context()
    dest = service_obj.get_by_host_and_binary(stack.db, ctx, DST, "volumesvc-compute")
    service_obj.update(stack.db, ctx, dest.uuid, disabled=True)
    _migrate(stack, server, {"host": None, "block_migration": "auto"})
    assert _settled(stack, server).status == "error"
    instance = instance_obj.get_by_uuid(stack.db, ctx, server)
    assert (instance.host, instance.task_state) == (SRC, None)
    assert _events(stack, server) == {"conductor_live_migrate_instance": "Error"}






def _only_bdm_attachments(stack, server):
    named = {b.attachment_id for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(),
                                                               server)}
    assert set(_attachments(stack, server)) == named
    return named


def test_a_source_killed_before_the_guest_left_undoes_the_move(stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    before = _attachments(stack, server)
    driver = stack.computes[SRC].manager.driver
    entered = []

    def die(*args, **kwargs):
        entered.append(args)
        raise _Killed()
    monkeypatch.setattr(driver, "live_migration", die)
    _migrate(stack, server)
    stack.wait(lambda: entered, what="the source in live_migration")
    monkeypatch.undo()
    assert len(_attachments(stack, server)) == 2 * len(before)  # the destination's made
    _restart(stack, SRC)
    migration = _migration(stack, server)
    assert migration.status == "error", migration
    instance = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "active")
    assert _attachments(stack, server) == before
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)
    # And the move works afterwards.
    _migrate(stack, server)
    stack.wait(lambda: _migration_statuses(stack, server) == ["error", "completed"],
               what="the second move")


def _migration_statuses(stack, server):
    return [m.status for m in migration_obj.list_for_instance(stack.db, stack.admin_context(),
                                                              server)]


def test_a_source_killed_after_the_guest_left_finishes_the_move(stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    before = _attachments(stack, server)
    driver = stack.computes[SRC].manager.driver
    real = driver.live_migration
    moved = []

    def move_then_die(*args, **kwargs):
        real(*args, **kwargs)
        moved.append(True)
        raise _Killed()
    monkeypatch.setattr(driver, "live_migration", move_then_die)
    _migrate(stack, server)
    stack.wait(lambda: moved, what="the guest on the destination")
    monkeypatch.undo()
    assert server in _domains(stack, DST)
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(), server).host == SRC
    _restart(stack, SRC)
    assert _migration(stack, server).status == "completed"
    instance = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert (instance.host, instance.task_state) == (DST, None)
    named = _only_bdm_attachments(stack, server)
    assert not named & set(before) and set(_attachments(stack, server).values()) == {DST}


def test_a_source_killed_after_the_switch_completes_at_its_start(stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    before = _attachments(stack, server)
    migrator = stack.computes[SRC].manager.migrator
    switched = []

    def die(*args, **kwargs):
        switched.append(True)
        raise _Killed()
    monkeypatch.setattr(migrator, "_after_switch", die)
    _migrate(stack, server)
    stack.wait(lambda: switched, what="the records switched")
    monkeypatch.undo()
    assert _migration(stack, server).status == "post-migrating"
    _restart(stack, SRC)
    assert _migration(stack, server).status == "completed"
    named = _only_bdm_attachments(stack, server)
    assert not named & set(before)
    for attachment_id in named:
        assert stack.cinder.attachments[attachment_id]["status"] == "attached"


def test_a_move_no_source_took_is_ended_by_the_conductors(stack):

    from volumesvc.conductor.tasks import moves as move_tasks

    server = _boot(stack)
    ctx = stack.admin_context()
    instance_obj.save(stack.db, ctx, server, {"task_state": "migrating"})
    migration = migration_obj.create(stack.db, ctx, instance_uuid=server, status="queued",
                                     source_compute=SRC)
    assert move_tasks.expire_unstarted(stack.conf, stack.db, ctx) == []
    stack.conf.set_override("live_migration_start_timeout", 1, group="conductor")
    time.sleep(1.2)
    assert move_tasks.expire_unstarted(stack.conf, stack.db, ctx) == [migration.id]
    assert _migration(stack, server).status == "error"
    instance = instance_obj.get_by_uuid(stack.db, ctx, server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "active")
