"""Resize and cold migration through the real API, conductor and two computes (fake libvirt).

Each compute has its own fake libvirt daemon, so a server's domain is on
exactly one of them; FakeCinder records which host's connector each
attachment was given.
"""

import pytest

from tests.functional import moves
from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.objects import service as service_obj
from volumesvc.states import power_state

SRC, DST = "rs-src", "rs-dst"
_Killed = moves.Killed
_restart = moves.restart
_domains = moves.domains
_attachments = moves.attachments
_attach = moves.attach_new
NANO, TINY = "42", "1"


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC, DST))
    yield stack
    stack.stop()


def _boot(stack, host=SRC, bdms=BLANK_ROOT):
    return moves.boot(stack, host, bdms)




def _instance(stack, server):
    return instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)




def _action(stack, server, body, version="2.1", status=202, token="admin:admin"):
    return stack.api("POST", f"/servers/{server}/action", body, version=version,
                     status=status, token=token)


def _migrations(stack, server):
    return migration_obj.list_for_instance(stack.db, stack.admin_context(), server)


def _settled(stack, server, statuses, timeout=20):
    return stack.wait(lambda: _migrations(stack, server)[-1]
                      if _migrations(stack, server)[-1].status in statuses else None,
                      timeout=timeout, what=f"the migration {statuses}")




def _one_attachment_per_volume_on(stack, server, host):
    bdms = bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)
    attachments = _attachments(stack, server)
    assert set(attachments) == {b.attachment_id for b in bdms}, (attachments, bdms)
    assert set(attachments.values()) == {host}
    for bdm in bdms:
        assert stack.cinder.attachments[bdm.attachment_id]["status"] == "attached"
    return attachments


def _resize_and_wait(stack, server, flavor=TINY):
    _action(stack, server, {"resize": {"flavorRef": flavor}})
    return _settled(stack, server, ("finished", "error"))


def test_resize_moves_the_server_and_its_volumes_then_confirm_keeps_it(stack):
    server = _boot(stack)
    data = _attach(stack, server)
    before = _attachments(stack, server)
    migration = _resize_and_wait(stack, server)
    assert migration.status == "finished", migration
    assert (migration.migration_type, migration.source_compute, migration.dest_compute) == (
        "resize", SRC, DST)
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "resized", None)
    assert instance.flavor["flavorid"] == TINY and instance.flavor["memory_mb"] == 512
    assert server in _domains(stack, DST) and server not in _domains(stack, SRC)
    xml = stack.computes[DST].manager.driver.get_domain_xml({"uuid": server})
    assert "<memory unit=\"KiB\">524288</memory>" in xml and f"<serial>{data}</serial>" in xml
    attachments = _one_attachment_per_volume_on(stack, server, DST)
    assert not set(attachments) & set(before)
    body = stack.server(server, version="2.47")
    assert body["status"] == "VERIFY_RESIZE" and body["flavor"]["original_name"] == "m1.tiny"
    for name in ("resize.start", "resize.end", "resize_finish.start", "resize_finish.end"):
        stack.wait(lambda name=name: stack.notifier.of(f"instance.{name}"), what=name)
    finished = stack.notifier.of("instance.resize_finish.end")[-1]
    assert finished["nova_object.data"]["flavor"]["nova_object.data"]["memory_mb"] == 512

    stack.api("POST", f"/servers/{server}/action", {"confirmResize": None}, status=204)
    assert _migrations(stack, server)[-1].status == "confirmed"
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "active", None)
    assert stack.server(server)["status"] == "ACTIVE"
    _one_attachment_per_volume_on(stack, server, DST)


def test_revert_puts_the_server_back_with_its_old_flavor(stack):
    server = _boot(stack)
    _attach(stack, server)
    assert _resize_and_wait(stack, server).status == "finished"
    _action(stack, server, {"revertResize": None})
    migration = _settled(stack, server, ("reverted", "error"))
    assert migration.status == "reverted", migration
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (SRC, "active", None)
    assert instance.flavor["flavorid"] == NANO
    stack.wait(lambda: stack.notifier.of("instance.resize_revert.end"), what="revert.end")
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)
    xml = stack.computes[SRC].manager.driver.get_domain_xml({"uuid": server})
    assert f"<memory unit=\"KiB\">{instance.flavor['memory_mb'] * 1024}</memory>" in xml
    _one_attachment_per_volume_on(stack, server, SRC)


def test_cold_migration_of_a_stopped_server_keeps_it_stopped(stack):
    server = _boot(stack)
    _action(stack, server, {"os-stop": None})
    stack.wait_instance(server, "stopped")
    _action(stack, server, {"migrate": {"host": DST}}, version="2.56")
    migration = _settled(stack, server, ("finished", "error"))
    assert (migration.status, migration.migration_type) == ("finished", "migration")
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.power_state) == (
        DST, "resized", power_state.SHUTDOWN)
    assert stack.computes[DST].manager.driver.get_info({"uuid": server}) == \
        power_state.SHUTDOWN
    stack.api("POST", f"/servers/{server}/action", {"confirmResize": None}, status=204)
    assert _instance(stack, server).vm_state == "stopped"
    _action(stack, server, {"os-start": None})
    stack.wait_instance(server, "active")
    _one_attachment_per_volume_on(stack, server, DST)


def test_unconfirmed_resizes_are_confirmed_after_the_window(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC, DST),
                  conf_overrides={(None, "resize_confirm_window"): 1})
    try:
        server = _boot(stack)
        assert _resize_and_wait(stack, server).status == "finished"
        from volumesvc.conductor.tasks import resize as resize_task

        stack.wait(lambda: resize_task.confirm_expired(
            stack.conductor.manager._deps, stack.admin_context()) or
            _migrations(stack, server)[-1].status == "confirmed", timeout=10,
            what="the automatic confirm")
        assert _migrations(stack, server)[-1].status == "confirmed"
        assert _instance(stack, server).vm_state == "active"
    finally:
        stack.stop()


def test_a_destination_that_fails_puts_the_server_back(stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    driver = stack.computes[DST].manager.driver

    def broken(*args, **kwargs):
        raise RuntimeError("the destination's libvirt is broken")
    monkeypatch.setattr(driver, "spawn", broken)
    migration = _resize_and_wait(stack, server)
    assert migration.status == "error"
    stack.wait(lambda: _instance(stack, server).task_state is None, what="no task")
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.flavor["flavorid"]) == (
        SRC, "active", NANO)
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)
    _one_attachment_per_volume_on(stack, server, SRC)
    faults = stack.api("GET", f"/servers/{server}", version="2.1")[1]
    assert faults["server"]["status"] == "ACTIVE"


@pytest.mark.parametrize("body, version, status, message", [
    ({"resize": {"flavorRef": "nope"}}, "2.1", 400, "Unable to find specified flavor."),
    ({"resize": {"flavorRef": NANO}}, "2.1", 400,
     "When resizing, instances must change flavor!"),
    ({"resize": {}}, "2.1", 400, "flavorRef"),
    ({"migrate": {"host": SRC}}, "2.56", 400, "to current host"),
    ({"migrate": {"host": "nowhere"}}, "2.56", 400, "could not be found"),
    ({"migrate": {"host": DST}}, "2.55", 400, "Additional properties"),
    ({"confirmResize": None}, "2.1", 409, "while it is in vm_state active"),
    ({"revertResize": None}, "2.1", 409, "while it is in vm_state active"),
])
def test_requests_refused_up_front(stack, body, version, status, message):
    server = _boot(stack)
    answer = _action(stack, server, body, version=version, status=status)[1]
    assert message in str(answer)
    assert _migrations(stack, server) == []
    assert _instance(stack, server).task_state is None


def test_only_an_admin_may_migrate_and_a_member_may_resize(stack):
    server = _boot(stack)
    _action(stack, server, {"migrate": None}, status=403, token="u1:p1")
    _action(stack, server, {"resize": {"flavorRef": TINY}}, token="u1:p1")
    assert _settled(stack, server, ("finished", "error")).status == "finished"


def test_a_resize_past_the_cores_quota_is_refused(stack):
    server = _boot(stack)
    stack.api("PUT", "/os-quota-sets/p1", {"quota_set": {"cores": 2}})
    answer = _action(stack, server, {"resize": {"flavorRef": "4"}}, status=403)[1]
    assert "Quota exceeded for cores" in str(answer)
    # Growing within the quota is fine: only the growth counts.
    _action(stack, server, {"resize": {"flavorRef": "3"}})
    assert _settled(stack, server, ("finished", "error")).status == "finished"


def test_no_other_host_is_refused_after_the_answer(stack):
    """The scheduler's refusal comes after the 202: in the migration and the actions."""
    server = _boot(stack)
    ctx = stack.admin_context()
    dest = service_obj.get_by_host_and_binary(stack.db, ctx, DST, "volumesvc-compute")
    service_obj.update(stack.db, ctx, dest.uuid, disabled=True)
    # A resize stays off its own host by default: no host is left.
    _action(stack, server, {"resize": {"flavorRef": TINY}})
    migration = _settled(stack, server, ("finished", "error"))
    assert migration.status == "error"
    stack.wait(lambda: _instance(stack, server).task_state is None, what="no task")
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.flavor["flavorid"]) == (
        SRC, "active", NANO)
    assert server in _domains(stack, SRC)


def test_a_resize_may_stay_on_its_host_when_allowed(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC,),
                  conf_overrides={(None, "allow_resize_to_same_host"): True})
    try:
        server = _boot(stack)
        _attach(stack, server)
        migration = _resize_and_wait(stack, server)
        assert (migration.status, migration.dest_compute) == ("finished", SRC)
        assert _instance(stack, server).flavor["flavorid"] == TINY
        assert server in _domains(stack, SRC)
        _one_attachment_per_volume_on(stack, server, SRC)
        _action(stack, server, {"revertResize": None})
        assert _settled(stack, server, ("reverted", "error")).status == "reverted"
        assert _instance(stack, server).flavor["flavorid"] == NANO
        assert server in _domains(stack, SRC)
        _one_attachment_per_volume_on(stack, server, SRC)
        # A cold migration never stays: with one host there is nowhere to go.
        _action(stack, server, {"migrate": None})
        assert _settled(stack, server, ("finished", "error")).status == "error"
    finally:
        stack.stop()






def test_a_source_killed_while_it_let_go_goes_on_at_its_start(stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    lifecycle = stack.computes[SRC].manager.lifecycle
    real = lifecycle.disconnect_volumes
    calls = []

    def disconnect_one_then_die(context, uuid, bdms, **kwargs):
        calls.append(True)
        real(context, uuid, bdms[:1], **kwargs)
        raise _Killed()
    monkeypatch.setattr(lifecycle, "disconnect_volumes", disconnect_one_then_die)
    _action(stack, server, {"resize": {"flavorRef": TINY}})
    stack.wait(lambda: calls, what="the source letting go")
    monkeypatch.undo()
    assert _instance(stack, server).task_state == "resize_migrating"
    _restart(stack, SRC)
    migration = _settled(stack, server, ("finished", "error"))
    assert migration.status == "finished", migration
    assert _instance(stack, server).host == DST
    _one_attachment_per_volume_on(stack, server, DST)


def test_a_destination_killed_while_it_started_the_server_goes_on_at_its_start(
        stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    driver = stack.computes[DST].manager.driver
    calls = []

    def die(*args, **kwargs):
        calls.append(True)
        raise _Killed()
    monkeypatch.setattr(driver, "spawn", die)
    _action(stack, server, {"resize": {"flavorRef": TINY}})
    stack.wait(lambda: calls, what="the destination starting the guest")
    monkeypatch.undo()
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state) == (SRC, "resize_finish")
    _restart(stack, DST)
    migration = _settled(stack, server, ("finished", "error"))
    assert migration.status == "finished", migration
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state) == (DST, "resized")
    assert server in _domains(stack, DST)
    _one_attachment_per_volume_on(stack, server, DST)


def test_a_source_killed_while_it_put_the_server_back_goes_on_at_its_start(
        stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    assert _resize_and_wait(stack, server).status == "finished"
    driver = stack.computes[SRC].manager.driver
    calls = []

    def die(*args, **kwargs):
        calls.append(True)
        raise _Killed()
    monkeypatch.setattr(driver, "spawn", die)
    _action(stack, server, {"revertResize": None})
    stack.wait(lambda: calls, what="the source starting the guest again")
    monkeypatch.undo()
    _restart(stack, SRC)
    migration = _settled(stack, server, ("reverted", "error"))
    assert migration.status == "reverted", migration
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.flavor["flavorid"]) == (
        SRC, "active", NANO)
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)
    _one_attachment_per_volume_on(stack, server, SRC)


def test_room_is_held_on_both_hosts_until_the_confirm(stack):
    server = _boot(stack)
    assert _resize_and_wait(stack, server, flavor="3").status == "finished"
    totals = instance_obj.flavor_totals_by_host(stack.db, stack.admin_context(), [SRC, DST])
    old = _migrations(stack, server)[-1].old_flavor
    assert totals[SRC] == {"vcpus": old["vcpus"], "memory_mb": old["memory_mb"]}
    assert totals[DST] == {"vcpus": 2, "memory_mb": 4096}
    stack.api("POST", f"/servers/{server}/action", {"confirmResize": None}, status=204)
    totals = instance_obj.flavor_totals_by_host(stack.db, stack.admin_context(), [SRC, DST])
    assert totals[SRC] == {"vcpus": 0, "memory_mb": 0}


def test_an_image_backed_server_is_resized_on_its_host_with_its_disk(tmp_path):
    """Its root disk is a file on the host: kept (what the guest wrote stays) and grown."""
    import os

    stack = Stack(tmp_path, hosts=(SRC, DST),
                  conf_overrides={(None, "allow_resize_to_same_host"): True})
    try:
        ctx = stack.context()
        image = stack.glance.create(ctx, name="tiny", owner="p1", data=b"\0" * 4096)
        server = stack.boot(ctx, [{"source_type": "image", "destination_type": "local",
                                   "boot_index": 0, "image_id": image["id"],
                                   "delete_on_termination": True}], host=SRC)
        stack.wait_instance(server, "active")
        path = f"{stack.conf.state_path}/instances/{server}/disk"
        with open(path, "r+b") as disk:  # what the guest wrote
            disk.write(b"GUEST-DATA")
        _action(stack, server, {"migrate": None}, status=400)
        answer = _action(stack, server, {"resize": {"flavorRef": "42"}}, status=400)[1]
        assert "must change flavor" in str(answer)
        migration = _resize_and_wait(stack, server, flavor="2")  # 20 GB root disk
        assert (migration.status, migration.dest_compute) == ("finished", SRC)
        with open(path, "rb") as disk:
            assert disk.read(10) == b"GUEST-DATA"
        assert os.path.getsize(path) == 20 << 30
        stack.api("POST", f"/servers/{server}/action", {"confirmResize": None}, status=204)
        assert _instance(stack, server).vm_state == "active"
        answer = _action(stack, server, {"resize": {"flavorRef": "1"}}, status=400)[1]
        assert "smaller root disk" in str(answer)
    finally:
        stack.stop()


def test_an_image_backed_server_is_not_resized_unless_its_host_may_be_kept(stack):
    ctx = stack.context()
    image = stack.glance.create(ctx, name="tiny", owner="p1", data=b"\0" * 4096)
    server = stack.boot(ctx, [{"source_type": "image", "destination_type": "local",
                               "boot_index": 0, "image_id": image["id"],
                               "delete_on_termination": True}], host=SRC)
    stack.wait_instance(server, "active")
    answer = _action(stack, server, {"resize": {"flavorRef": TINY}}, status=400)[1]
    assert "allow_resize_to_same_host" in str(answer)
    assert _migrations(stack, server) == []


def test_deleting_a_resized_server_confirms_its_move(stack):
    server = _boot(stack)
    data = _attach(stack, server)
    assert _resize_and_wait(stack, server).status == "finished"
    stack.api("DELETE", f"/servers/{server}", status=204)
    stack.wait_for_server_gone(server)
    assert _migrations(stack, server)[-1].status == "confirmed"
    assert server not in _domains(stack, DST) | _domains(stack, SRC)
    assert _attachments(stack, server) == {}
    assert stack.cinder.get(stack.admin_context(), data)["status"] == "available"


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
    assert _resize_and_wait(stack, server).status == "finished"
    assert _attachments(stack, other) == kept
    _one_attachment_per_volume_on(stack, server, DST)
    assert other in _domains(stack, SRC) and server in _domains(stack, DST)
    xml = stack.computes[SRC].manager.driver.get_domain_xml({"uuid": other})
    assert f"<serial>{shared['id']}</serial>" in xml
    _action(stack, server, {"revertResize": None})
    assert _settled(stack, server, ("reverted", "error")).status == "reverted"
    assert _attachments(stack, other) == kept
    _one_attachment_per_volume_on(stack, server, SRC)
