"""Evacuation through the real API, conductor and two computes (fake libvirt).

Each compute has its own fake libvirt daemon, so a server's domain is on
exactly one of them; FakeCinder records which host's connector each
attachment was given. The dead host is modelled as Nova's operators do:
its compute stopped and its service forced down; its fake libvirt (its
"QEMU processes") outlives it.
"""

import pytest

from tests.functional import moves
from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import instance_fault as fault_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.objects import service as service_obj

SRC, DST = "ev-src", "ev-dst"
_domains = moves.domains


@pytest.fixture
def stack(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC, DST))
    yield stack
    stack.stop()


def _boot(stack, host=SRC, bdms=BLANK_ROOT):
    return moves.boot(stack, host, bdms)


def _attach(stack, server, volume_type=None):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "", volume_type=volume_type)
    stack.attach_volume(server, volume["id"])
    stack.wait(lambda: any(a["instance"] == server and a["volume_id"] == volume["id"]
                           and a["status"] == "attached"
                           for a in list(stack.cinder.attachments.values())),
               what="the volume attached")
    return volume["id"]




def _kill(stack, host=SRC):
    """The host dies: its compute stops, an operator forces its service down.

    Returns the compute's driver: its domains outlive the compute, as QEMU
    processes outlive a killed compute (until the host itself is gone).
    """
    driver = stack.computes[host].manager.driver
    stack.computes.pop(host).stop()
    ctx = stack.admin_context()
    service = service_obj.get_by_host_and_binary(stack.db, ctx, host, "volumesvc-compute")
    service_obj.update(stack.db, ctx, service.uuid, forced_down=True)
    return driver


def _revive(stack, driver, host=SRC):
    """The host comes back: its compute starts (on the same libvirt) and is up again."""
    ctx = stack.admin_context()
    service = service_obj.get_by_host_and_binary(stack.db, ctx, host, "volumesvc-compute")
    service_obj.update(stack.db, ctx, service.uuid, forced_down=False)
    stack.add_compute(host, driver=driver)


def _evacuate(stack, server, body=None, version="2.68", status=200, token="admin:admin"):
    body = {"host": DST} if body is None else body
    return stack.api("POST", f"/servers/{server}/action", {"evacuate": body},
                     version=version, status=status, token=token)


def _migration(stack, server):
    (migration,) = [m for m in migration_obj.list_for_instance(
        stack.db, stack.admin_context(), server) if m.migration_type == "evacuation"][-1:]
    return migration


def _settled(stack, server, statuses=("done", "completed", "error", "failed"), timeout=20):
    return stack.wait(lambda: _migration(stack, server)
                      if _migration(stack, server).status in statuses else None,
                      timeout=timeout, what="the evacuation to settle")


def _attachments(stack, server):
    """{attachment id: host its connector named} of the server, as Cinder has them."""
    return {a["id"]: a.get("host") for a in stack.cinder.attachments.values()
            if a["instance"] == server}


def _per_volume(stack, server):
    """{volume id: number of the server's attachments of it}."""
    counts = {}
    for a in stack.cinder.attachments.values():
        if a["instance"] == server:
            counts[a["volume_id"]] = counts.get(a["volume_id"], 0) + 1
    return counts


def _bdms(stack, server):
    return {b.volume_id: b for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(),
                                                             server)}


def _instance(stack, server):
    return instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)


def test_a_server_with_two_volumes_starts_on_the_destination(stack):
    server = _boot(stack)
    data = _attach(stack, server)
    before = set(_attachments(stack, server))
    _kill(stack)
    assert _evacuate(stack, server)[1] is None
    migration = _settled(stack, server)
    assert migration.status == "done", migration
    instance = _instance(stack, server)
    assert (instance.host, instance.node, instance.task_state, instance.vm_state) == (
        DST, DST, None, "active")
    assert server in _domains(stack, DST)
    bdms = _bdms(stack, server)
    assert data in bdms and len(bdms) == 2
    attachments = _attachments(stack, server)
    # One attachment per volume, each new, made with the destination's connector.
    assert set(attachments) == {b.attachment_id for b in bdms.values()}
    assert not set(attachments) & before
    assert set(attachments.values()) == {DST}
    for volume_id in bdms:
        assert stack.cinder.get(stack.admin_context(), volume_id)["status"] == "in-use"
    # The dead host's connections are kept for its return.
    assert set(migration.source_connections) == set(bdms)
    xml = stack.computes[DST].manager.driver.get_domain_xml({"uuid": server})
    assert f"<serial>{data}</serial>" in xml
    body = stack.api("GET", f"/servers/{server}", version="2.68")[1]
    assert body["server"]["OS-EXT-SRV-ATTR:host"] == DST
    assert body["server"]["status"] == "ACTIVE"
    (action,) = [a for a in action_obj.list_actions(stack.db, stack.admin_context(), server)
                 if a.action == "evacuate"]
    assert action.request_id


def _fault(stack, server):
    fault = fault_obj.latest(stack.db, stack.admin_context(), server)
    return fault.message if fault else None


def test_a_stopped_server_stays_stopped(stack):
    server = _boot(stack)
    stack.api("POST", f"/servers/{server}/action", {"os-stop": None})
    stack.wait_instance(server, "stopped")
    _kill(stack)
    _evacuate(stack, server)
    assert _settled(stack, server).status == "done"
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.power_state) == (DST, "stopped", 4)
    # Defined there, not running: a start needs nothing more of the destination.
    assert server in _domains(stack, DST)
    stack.api("POST", f"/servers/{server}/action", {"os-start": None})
    stack.wait_instance(server, "active")


def test_from_2_95_an_active_server_ends_stopped(stack):
    server = _boot(stack)
    _kill(stack)
    assert _evacuate(stack, server, version="2.95")[1] is None
    assert _settled(stack, server).status == "done"
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "stopped", None)


def test_below_2_14_the_answer_has_the_password_and_the_scheduler_chooses(stack):
    server = _boot(stack)
    _kill(stack)
    body = _evacuate(stack, server, {"onSharedStorage": False}, version="2.1")[1]
    assert isinstance(body["adminPass"], str) and body["adminPass"]
    assert _settled(stack, server).status == "done"
    assert _instance(stack, server).host == DST


def test_force_at_2_29_takes_the_named_host(stack):
    server = _boot(stack)
    _kill(stack)
    _evacuate(stack, server, {"host": DST, "force": True}, version="2.29")
    assert _settled(stack, server).status == "done"


@pytest.mark.parametrize("body,version,message", [
    ({"host": SRC}, "2.68", "The target host can't be the same one."),
    ({"host": DST, "force": True}, "2.68", "force"),
    ({"force": True}, "2.29", "Can't force to a non-provided destination"),
    ({"host": DST}, "2.1", "onSharedStorage"),
    ({"host": DST, "onSharedStorage": True, "adminPass": "x"}, "2.1",
     "admin password can't be changed on existing disk"),
    ({"host": DST, "onSharedStorage": False}, "2.14", "onSharedStorage"),
])
def test_bodies_refused_up_front(stack, body, version, message):
    server = _boot(stack)
    _kill(stack)
    fault = _evacuate(stack, server, body, version=version, status=400)[1]
    assert message in fault["badRequest"]["message"], fault
    assert not migration_obj.list_for_instance(stack.db, stack.admin_context(), server)
    assert _instance(stack, server).task_state is None


def test_an_unknown_host_is_a_404(stack):
    server = _boot(stack)
    _kill(stack)
    fault = _evacuate(stack, server, {"host": "nowhere"}, status=404)[1]
    assert fault["itemNotFound"]["message"] == "Compute host nowhere not found."


def test_a_server_whose_compute_is_up_is_refused(stack):
    server = _boot(stack)
    fault = _evacuate(stack, server, status=400)[1]
    assert fault["badRequest"]["message"] == f"Compute service of {SRC} is still in use."
    assert not migration_obj.list_for_instance(stack.db, stack.admin_context(), server)
    assert server in _domains(stack, SRC)


def test_only_an_admin_may_evacuate(stack):
    server = _boot(stack)
    _kill(stack)
    fault = _evacuate(stack, server, token="u1:p1", status=403)[1]
    assert "os_compute_api:os-evacuate" in fault["forbidden"]["message"]


def test_a_server_in_a_task_is_a_409(stack):
    server = _boot(stack)
    _kill(stack)
    instance_obj.save(stack.db, stack.admin_context(), server, {"task_state": "rebooting"})
    fault = _evacuate(stack, server, status=409)[1]
    assert "task_state rebooting" in fault["conflictingRequest"]["message"]


def test_a_shelved_server_is_a_409(stack):
    server = _boot(stack)
    _kill(stack)
    instance_obj.save(stack.db, stack.admin_context(), server, {"vm_state": "shelved"})
    fault = _evacuate(stack, server, status=409)[1]
    assert "vm_state shelved" in fault["conflictingRequest"]["message"]


def test_a_local_root_disk_is_refused(stack):
    ctx = stack.context("p4")
    image = stack.glance.create(ctx, name="tiny", owner="p4", data=b"\0" * 4096)
    server = stack.boot(ctx, [{"source_type": "image", "destination_type": "local",
                               "boot_index": 0, "image_id": image["id"]}], host=SRC)
    stack.wait_instance(server, "active")
    _kill(stack)
    fault = _evacuate(stack, server, status=400)[1]
    assert "local root disk" in fault["badRequest"]["message"]
    assert "Cinder volumes" in fault["badRequest"]["message"]


def test_an_unknown_server_is_a_404(stack):
    _evacuate(stack, "00000000-0000-0000-0000-000000000000", status=404)


def test_no_destination_is_refused_after_the_answer(stack):
    """The scheduler's refusal comes after the 200: in the migration, a fault, the actions."""
    server = _boot(stack)
    _kill(stack)
    ctx = stack.admin_context()
    dest = service_obj.get_by_host_and_binary(stack.db, ctx, DST, "volumesvc-compute")
    service_obj.update(stack.db, ctx, dest.uuid, disabled=True)
    before = _attachments(stack, server)
    _evacuate(stack, server, {})
    assert _settled(stack, server).status == "error"
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "active")
    assert "No valid host" in _fault(stack, server)
    assert _attachments(stack, server) == before


def _one_attachment_per_volume(stack, server):
    """Each volume of the server is attached to it exactly once, by the one its BDM names."""
    bdms = _bdms(stack, server)
    assert _per_volume(stack, server) == dict.fromkeys(bdms, 1)
    assert set(_attachments(stack, server)) == {b.attachment_id for b in bdms.values()}


class _Recorder:
    """The volumes a driver connects and disconnects (by serial), around the real calls."""

    def __init__(self, monkeypatch, driver):
        # The real driver under the compute's timing wrapper: a compute started
        # again on the same driver wraps it anew.
        driver = getattr(driver, "__wrapped__", driver)
        self.connected, self.disconnected = [], []
        real_connect, real_disconnect = driver.connect_volume, driver.disconnect_volume

        def connect(info):
            self.connected.append(info.get("serial"))
            return real_connect(info)

        def disconnect(info):
            self.disconnected.append(info.get("serial"))
            return real_disconnect(info)
        monkeypatch.setattr(driver, "connect_volume", connect)
        monkeypatch.setattr(driver, "disconnect_volume", disconnect)


def test_a_failed_spawn_leaves_the_server_error_with_one_attachment_per_volume(
        stack, monkeypatch):
    server = _boot(stack)
    _attach(stack, server)
    _kill(stack)
    dest = stack.computes[DST].manager.driver
    recorder = _Recorder(monkeypatch, dest)

    def broken(*args, **kwargs):
        raise RuntimeError("qemu could not start")
    monkeypatch.setattr(dest, "spawn", broken)
    _evacuate(stack, server)
    assert _settled(stack, server).status == "failed"
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "error")
    assert "qemu could not start" in _fault(stack, server)
    assert server not in _domains(stack, DST)
    _one_attachment_per_volume(stack, server)
    # Nothing stays connected on the destination, no connector names it.
    assert sorted(recorder.connected) == sorted(recorder.disconnected) == sorted(
        _bdms(stack, server))
    assert set(_attachments(stack, server).values()) == {None}
    # An admin evacuates it again, and this time it works.
    monkeypatch.undo()
    _evacuate(stack, server)
    stack.wait(lambda: _migration(stack, server).status == "done", what="the second try")
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state) == (DST, "active")
    _one_attachment_per_volume(stack, server)
    assert set(_attachments(stack, server).values()) == {DST}


def test_the_old_host_back_lets_go_of_the_evacuated_server(stack, monkeypatch):
    server = _boot(stack)
    data = _attach(stack, server)
    driver = _kill(stack)
    assert server in set(driver.list_instance_uuids())  # the guest outlived its compute
    _evacuate(stack, server)
    migration = _settled(stack, server)
    assert migration.status == "done"
    # A leftover attachment no BDM names (as a Cinder that kept one would have).
    stray = stack.cinder.attachment_create(stack.admin_context(), data, server)["id"]
    recorder = _Recorder(monkeypatch, driver)
    _revive(stack, driver)
    assert _migration(stack, server).status == "completed"
    assert server not in _domains(stack, SRC) and server in _domains(stack, DST)
    assert sorted(recorder.disconnected) == sorted(migration.source_connections)
    assert stray not in stack.cinder.attachments
    _one_attachment_per_volume(stack, server)
    assert set(_attachments(stack, server).values()) == {DST}
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state, instance.task_state) == (DST, "active", None)


def test_a_shared_volume_another_server_here_uses_stays_connected(stack, monkeypatch):
    server = _boot(stack)
    other = _boot(stack)
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    shared = stack.cinder.create(stack.context(), 1, "shared", "", volume_type="multi")["id"]
    for s in (server, other):
        stack.attach_volume(s, shared)
    stack.wait(lambda: len(stack.cinder.get(stack.admin_context(), shared)
                           .get("attachments") or []) == 2, what="two attachments")
    kept = _attachments(stack, other)
    driver = _kill(stack)
    _evacuate(stack, server)
    assert _settled(stack, server).status == "done"
    recorder = _Recorder(monkeypatch, driver)
    _revive(stack, driver)
    assert _migration(stack, server).status == "completed"
    root = next(v for v, b in _bdms(stack, server).items() if b.boot_index == 0)
    assert recorder.disconnected == [root]  # not the shared volume: the other uses it
    assert other in _domains(stack, SRC) and server not in _domains(stack, SRC)
    assert _attachments(stack, other) == kept
    assert _instance(stack, other).host == SRC


class _Killed(BaseException):
    """The compute process dying: no handler of the step runs any more."""


@pytest.mark.parametrize("where", ["spawn", "attachment_complete"])
def test_a_destination_killed_midway_ends_the_server_error_at_its_start(
        stack, monkeypatch, where):
    """Killed before the domain is defined (spawn), or after it runs (completing)."""
    server = _boot(stack)
    _attach(stack, server)
    _kill(stack)
    dest = stack.computes[DST].manager.driver
    recorder = _Recorder(monkeypatch, dest)
    target = dest if where == "spawn" else stack.cinder
    real = getattr(target, where)
    entered = []

    def die(*args, **kwargs):
        if entered:
            return real(*args, **kwargs)
        entered.append(True)
        raise _Killed()
    monkeypatch.setattr(target, where, die)
    _evacuate(stack, server)
    stack.wait(lambda: entered, what=f"the destination in {where}")
    assert _migration(stack, server).status == "running"
    assert (server in _domains(stack, DST)) == (where == "attachment_complete")
    stack.computes.pop(DST).stop()
    stack.add_compute(DST, driver=dest)
    migration = _migration(stack, server)
    assert migration.status == "failed", migration
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "error")
    assert f"the compute {DST} stopped during it" in _fault(stack, server)
    assert server not in _domains(stack, DST)
    _one_attachment_per_volume(stack, server)
    assert sorted(recorder.connected) == sorted(recorder.disconnected) == sorted(
        _bdms(stack, server))
    # And the evacuation works afterwards.
    _evacuate(stack, server)
    stack.wait(lambda: _migration(stack, server).status == "done", what="the second try")
    _one_attachment_per_volume(stack, server)


LUKS = {"provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256,
        "control_location": "front-end"}


def _secrets(driver):
    """The volume ids whose decryption secret ``driver``'s libvirt holds."""
    driver = getattr(driver, "__wrapped__", driver)
    return {s.usageID() for s in driver.host.get_connection().listAllSecrets()
            if s.usageType() == driver.libvirt.VIR_SECRET_USAGE_TYPE_VOLUME}


def test_an_encrypted_volume_is_opened_there_and_its_secret_leaves_the_old_host(tmp_path):
    stack = Stack(tmp_path, hosts=(SRC, DST),
                  conf_overrides={("libvirt", "connection_uri"): "qemu:///system"})
    try:
        stack.cinder.create_volume_type("luks", encryption=LUKS)
        server = _boot(stack)
        secret = _attach(stack, server, volume_type="luks")
        driver = _kill(stack)
        assert _secrets(driver) == {secret}
        # The key is read as the caller, as Nova does: Barbican gives a
        # project's key to that project's admin only.
        _evacuate(stack, server, token="admin:p1")
        assert _settled(stack, server).status == "done"
        assert _secrets(stack.computes[DST].manager.driver) == {secret}
        xml = stack.computes[DST].manager.driver.get_domain_xml({"uuid": server})
        assert "<encryption" in xml
        _revive(stack, driver)
        assert _migration(stack, server).status == "completed"
        assert _secrets(stack.computes[SRC].manager.driver) == set()
        assert _secrets(stack.computes[DST].manager.driver) == {secret}
    finally:
        stack.stop()


def test_the_conductor_refuses_when_the_old_host_came_back(stack):
    """Between the answer and the conductor the old host's compute came back: refused."""
    server = _boot(stack)
    ctx = stack.admin_context()
    instance_obj.save(stack.db, ctx, server, {"task_state": "rebuilding"})
    migration = migration_obj.create(stack.db, ctx, instance_uuid=server,
                                     migration_type="evacuation", source_compute=SRC)
    stack.conductor_api().evacuate_instance(ctx, instance_uuid=server,
                                            migration_id=migration.id, host=DST)
    assert _settled(stack, server).status == "error"
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "active")
    assert f"Compute service of {SRC} is still in use." in _fault(stack, server)
    assert server in _domains(stack, SRC) and server not in _domains(stack, DST)


def test_the_old_host_back_during_the_evacuation_only_loses_the_domain(stack, monkeypatch):
    import threading

    server = _boot(stack)
    _attach(stack, server)
    driver = _kill(stack)
    dest = stack.computes[DST].manager.driver
    real_spawn, entered, release = dest.spawn, threading.Event(), threading.Event()

    def held_spawn(*args, **kwargs):
        entered.set()
        assert release.wait(20)
        return real_spawn(*args, **kwargs)
    monkeypatch.setattr(dest, "spawn", held_spawn)
    _evacuate(stack, server)
    assert entered.wait(20)
    _revive(stack, driver)
    # The guest is gone from the old host; its rebuilding task is not a dead rebuild there.
    assert server not in _domains(stack, SRC)
    assert _instance(stack, server).task_state == "rebuilding"
    assert _migration(stack, server).status == "running"
    release.set()
    stack.wait(lambda: _migration(stack, server).status == "done", what="done")
    instance = _instance(stack, server)
    assert (instance.host, instance.vm_state) == (DST, "active")
    _one_attachment_per_volume(stack, server)
    # The next start of the old host completes it.
    stack.computes.pop(SRC).stop()
    stack.add_compute(SRC, driver=driver)
    assert _migration(stack, server).status == "completed"


def test_an_evacuation_no_conductor_took_is_ended_by_the_conductors(stack):
    import time

    from volumesvc.conductor.tasks import moves as move_tasks

    server = _boot(stack)
    _kill(stack)
    ctx = stack.admin_context()
    instance_obj.save(stack.db, ctx, server, {"task_state": "rebuilding"})
    migration = migration_obj.create(stack.db, ctx, instance_uuid=server,
                                     migration_type="evacuation", source_compute=SRC)
    assert move_tasks.expire_unstarted(stack.conf, stack.db, ctx) == []
    stack.conf.set_override("live_migration_start_timeout", 1, group="conductor")
    time.sleep(1.2)
    assert move_tasks.expire_unstarted(stack.conf, stack.db, ctx) == [migration.id]
    assert _migration(stack, server).status == "error"
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state, instance.vm_state) == (SRC, None, "active")
    assert "Evacuation not started within 1 s" == _fault(stack, server)
    # And the admin may evacuate it now.
    _evacuate(stack, server)
    stack.wait(lambda: _migration(stack, server).status == "done", what="the evacuation")


def _failed_evacuation(stack, monkeypatch, server):
    """The old host dies and its server's evacuation fails (QEMU does not start on the
    destination, until the test takes ``spawn`` back); the old host's driver."""
    driver = _kill(stack)
    dest = stack.computes[DST].manager.driver

    def broken(*args, **kwargs):
        raise RuntimeError("qemu could not start")
    monkeypatch.setattr(dest, "spawn", broken)
    _evacuate(stack, server)
    assert _settled(stack, server).status == "failed"
    return driver


def test_after_a_failed_try_the_old_host_still_drops_every_connection(stack, monkeypatch):
    """The second try finds the BDMs without the old host's connections; the first saved them."""
    server = _boot(stack)
    _attach(stack, server)
    driver = _failed_evacuation(stack, monkeypatch, server)
    monkeypatch.delattr(stack.computes[DST].manager.driver, "spawn")
    _evacuate(stack, server)
    stack.wait(lambda: _migration(stack, server).status == "done", what="the second try")
    assert _migration(stack, server).source_connections == {}
    recorder = _Recorder(monkeypatch, driver)
    _revive(stack, driver)
    statuses = [m.status for m in migration_obj.list_for_instance(
        stack.db, stack.admin_context(), server)]
    assert statuses == ["failed", "completed"]
    assert sorted(recorder.disconnected) == sorted(_bdms(stack, server))
    assert server not in _domains(stack, SRC)


def test_a_destination_killed_between_switch_and_delete_leaves_one_attachment(
        stack, monkeypatch):
    """Killed after a BDM took the new attachment, before the old one was deleted."""
    server = _boot(stack)
    _attach(stack, server)
    _kill(stack)
    before = set(_attachments(stack, server))
    entered = []
    real_delete = stack.cinder.attachment_delete

    def die(context, attachment_id):
        if attachment_id in before:
            entered.append(attachment_id)
            raise _Killed()
        return real_delete(context, attachment_id)
    monkeypatch.setattr(stack.cinder, "attachment_delete", die)
    _evacuate(stack, server)
    stack.wait(lambda: entered, what="the destination deleting the old attachment")
    monkeypatch.undo()
    assert len(_attachments(stack, server)) == len(before) + 1
    dest = stack.computes[DST].manager.driver
    stack.computes.pop(DST).stop()
    stack.add_compute(DST, driver=dest)
    assert _migration(stack, server).status == "failed"
    assert _instance(stack, server).vm_state == "error"
    _one_attachment_per_volume(stack, server)
    assert server not in _domains(stack, DST)


def test_the_old_host_lets_go_once_a_conductor_answers(stack, monkeypatch):
    """No conductor answers the cleanup's first question: the start goes on, a retry does it."""
    from volumesvc.conductor import rpcapi as conductor_rpcapi

    server = _boot(stack)
    driver = _kill(stack)
    _evacuate(stack, server)
    assert _settled(stack, server).status == "done"
    real = conductor_rpcapi.ConductorAPI.migration_list_evacuations
    refused = []

    def no_answer(self, *args, **kwargs):
        if not refused:
            refused.append(True)
            raise conductor_rpcapi.MessagingTimeout("no conductor answered")
        return real(self, *args, **kwargs)
    monkeypatch.setattr(conductor_rpcapi.ConductorAPI, "migration_list_evacuations",
                        no_answer)
    _revive(stack, driver)
    assert refused
    stack.wait(lambda: _migration(stack, server).status == "completed",
               what="the retried cleanup")
    assert server not in _domains(stack, SRC)


def test_after_a_failed_evacuation_the_old_host_takes_its_server_back(stack, monkeypatch):
    """The evacuation failed and the old host comes back instead of a second try.

    The server is still the old host's (``ERROR``), but each volume's
    attachment is a reserved one without a connector (the failed try's undo)
    and the BDMs have no connection. Its start connects every volume again
    with its own connector and leaves the server ``ERROR``: a hard reboot
    (as in Nova) brings the guest back with all its disks. Regression: only
    the root was connected again (by the reconciliation), and the reboot
    started the guest without its data volume.
    """
    server = _boot(stack)
    data = _attach(stack, server)
    driver = _failed_evacuation(stack, monkeypatch, server)
    assert _instance(stack, server).vm_state == "error"
    recorder = _Recorder(monkeypatch, driver)
    _revive(stack, driver)
    # Connected here again, nothing dropped; still ERROR for the admin.
    _one_attachment_per_volume(stack, server)
    assert set(_attachments(stack, server).values()) == {SRC}
    assert sorted(recorder.connected) == sorted(_bdms(stack, server))
    assert recorder.disconnected == []
    assert all(b.connection_info for b in _bdms(stack, server).values())
    assert _instance(stack, server).vm_state == "error"
    assert _migration(stack, server).source_connections == {}
    stack.api("POST", f"/servers/{server}/action", {"reboot": {"type": "HARD"}}, status=202)
    stack.wait_instance(server, "active")
    instance = _instance(stack, server)
    assert (instance.host, instance.task_state) == (SRC, None)
    _one_attachment_per_volume(stack, server)
    assert set(_attachments(stack, server).values()) == {SRC}
    bdms = _bdms(stack, server)
    assert all(bool(b.connection_info) for b in bdms.values())
    assert data in bdms
    assert server in _domains(stack, SRC)
    assert server not in _domains(stack, DST)
