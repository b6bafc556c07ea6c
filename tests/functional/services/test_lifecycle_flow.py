"""Stop/start, shelve/offload/unshelve and attach/detach while offloaded, end to end.

API → conductor → compute over fake://, FakeCinder and the libvirt driver on
the fake libvirt: what the domain holds is read from libvirt, what Cinder
holds from the fake's attachment records (connector included), so the three
views (BDM, Cinder, domain) are checked against each other after each step.
"""

import logging

import pytest

from tests.functional import killing
from tests.functional.stack import BLANK_ROOT as ROOT
from tests.functional.stack import Stack
from volumesvc import exception
from volumesvc.conductor import scheduling
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import instance_fault as fault_obj

TOKEN = "u1:p1"
HOST = "fn-compute"


@pytest.fixture
def server(stack):
    uuid = stack.boot(stack.context(), ROOT)
    stack.wait_instance(uuid, "active")
    return uuid


def _driver(stack):
    return stack.computes[HOST].manager.driver


def _xml(stack, uuid):
    return _driver(stack).get_domain_xml({"uuid": uuid})


def _domain_serials(stack, uuid):
    """Volume ids of the disks in the live (or defined) domain, sorted."""
    import xml.etree.ElementTree as ET

    xml = _xml(stack, uuid)
    if not xml:
        return None
    return sorted(s.text for s in ET.fromstring(xml).iterfind(".//disk/serial"))


def _bdm_volumes(stack, uuid):
    return sorted(b.volume_id for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(),
                                                                uuid) if b.volume_id)


def _attachments(stack, uuid):
    """{volume_id: [attachment records]} of the server in FakeCinder."""
    out = {}
    for att in list(stack.cinder.attachments.values()):
        if att["instance"] == uuid:
            out.setdefault(att["volume_id"], []).append(att)
    return out


def _action(stack, uuid, body, version="2.1", token=TOKEN, status=202):
    return stack.api("POST", f"/servers/{uuid}/action", body, version=version, token=token,
                     status=status)


def _attach(stack, uuid, volume_id, version, status):
    return stack.api("POST", f"/servers/{uuid}/os-volume_attachments",
                     {"volumeAttachment": {"volumeId": volume_id}}, version=version,
                     token=TOKEN, status=status)


def _volume_status(stack, volume_id, status):
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == status,
               what=f"volume {volume_id} {status}")


def _new_volume(stack, name="data"):
    return stack.cinder.create(stack.context(), 1, name, "")["id"]


def _shelve_to_offloaded(stack, uuid):
    _action(stack, uuid, {"shelve": None})
    return stack.wait_for_server_status(uuid, "SHELVED_OFFLOADED")


def _assert_offloaded(stack, uuid):
    """No domain, no host, each volume attached in Cinder once, without a connector."""
    inst = instance_obj.get_by_uuid(stack.db, stack.admin_context(), uuid)
    assert (inst.vm_state, inst.task_state, inst.host, inst.node) == (
        "shelved_offloaded", None, None, None)
    assert _xml(stack, uuid) == ""
    attachments = _attachments(stack, uuid)
    assert sorted(attachments) == _bdm_volumes(stack, uuid)
    for volume_id, records in attachments.items():
        assert len(records) == 1, (volume_id, records)
        assert records[0]["connector"] is None, volume_id
    bdms = bdm_obj.list_by_instance(stack.db, stack.admin_context(), uuid)
    assert {b.attachment_id for b in bdms} == {r[0]["id"] for r in attachments.values()}


def _assert_active_here(stack, uuid):
    """ACTIVE on HOST; the domain's disks are exactly the BDMs', each in-use here."""
    server = stack.wait_for_server_status(uuid, "ACTIVE")
    assert _domain_serials(stack, uuid) == _bdm_volumes(stack, uuid)
    for volume_id, records in _attachments(stack, uuid).items():
        assert len(records) == 1
        assert records[0]["status"] == "attached"
        assert records[0]["connector"]["host"] == HOST
        assert stack.cinder.get(None, volume_id)["status"] == "in-use"
    return server


def _actions(stack, uuid):
    return [a.action for a in action_obj.list_actions(stack.db, stack.admin_context(), uuid)]


# -- (1) stop / start -----------------------------------------------------------------


def test_stop_start_keeps_every_attachment_and_rebuilds_the_disks(stack, server):
    data = _new_volume(stack)
    _attach(stack, server, data, "2.100", 200)
    _volume_status(stack, data, "in-use")

    _action(stack, server, {"os-stop": None})
    stopped = stack.wait_for_server_status(server, "SHUTOFF")
    assert stopped["OS-EXT-STS:power_state"] == 4
    guest = _driver(stack).host.find_guest(server)
    assert guest is not None and not guest.is_active()   # defined, off
    assert stack.cinder.get(None, data)["status"] == "in-use"

    # Attach while stopped edits the definition; start then shows all three disks.
    later = _new_volume(stack, "later")
    _attach(stack, server, later, "2.100", 200)
    _volume_status(stack, later, "in-use")

    _action(stack, server, {"os-start": None})
    _assert_active_here(stack, server)
    assert len(_domain_serials(stack, server)) == 3
    assert _driver(stack).host.find_guest(server).is_active()
    assert _actions(stack, server)[:2] == ["start", "attach_volume"]
    assert "stop" in _actions(stack, server)
    stack.wait(lambda: stack.notifier.of("instance.power_on.end"), what="power_on.end")
    assert stack.notifier.of("instance.power_off.end")
    # A stopped server cannot be stopped again; a running one not started.
    _action(stack, server, {"os-start": None}, status=409)
    _action(stack, server, {"os-stop": None})
    stack.wait_for_server_status(server, "SHUTOFF")
    _action(stack, server, {"os-stop": None}, status=409)


def test_start_recreates_the_disk_set_from_the_bdms(stack, server):
    """A disk in the old definition without a BDM does not come back on start."""
    data = _new_volume(stack)
    _attach(stack, server, data, "2.100", 200)
    _volume_status(stack, data, "in-use")
    _action(stack, server, {"os-stop": None})
    stack.wait_for_server_status(server, "SHUTOFF")
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), data, server)
    bdm_obj.destroy(stack.db, stack.admin_context(), bdm.uuid)   # the BDM went away
    _action(stack, server, {"os-start": None})
    stack.wait_for_server_status(server, "ACTIVE")
    assert _domain_serials(stack, server) == _bdm_volumes(stack, server)
    assert data not in _xml(stack, server)


def test_stop_failure_leaves_the_server_active_with_a_fault(stack, server, monkeypatch):
    def broken(instance):
        raise exception.VirtDriverError(reason="injected power-off failure")
    monkeypatch.setattr(_driver(stack), "power_off", broken)
    ctx_req = _action(stack, server, {"os-stop": None})[2]["x-openstack-request-id"]
    stack.wait(lambda: instance_obj.get_by_uuid(stack.db, stack.admin_context(),
                                                server).task_state is None, what="task cleared")
    inst = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert inst.vm_state == "active"
    assert "injected power-off failure" in fault_obj.latest(stack.db, stack.admin_context(),
                                                           server).message
    events = stack.events(stack.context(request_id=ctx_req), server, ctx_req)
    assert [(e.event, e.result) for e in events] == [("compute_stop_instance", "Error")]
    stack.wait(lambda: stack.notifier.of("instance.power_off.error"), what="error")


# -- (2)-(4) shelve, attach/detach while offloaded, unshelve ----------------------------


def test_shelve_attach_detach_offloaded_unshelve(stack, server):
    second = _new_volume(stack, "second")
    _attach(stack, server, second, "2.100", 200)
    _volume_status(stack, second, "in-use")

    offloaded = _shelve_to_offloaded(stack, server)
    assert offloaded["OS-EXT-STS:vm_state"] == "shelved_offloaded"
    assert offloaded["OS-EXT-SRV-ATTR:host"] is None
    _assert_offloaded(stack, server)
    assert stack.cinder.get(None, second)["status"] == "reserved"
    assert _actions(stack, server)[0] == "shelve"
    events = stack.events(stack.context(), server, action_obj.list_actions(
        stack.db, stack.admin_context(), server)[0].request_id)
    assert sorted((e.event, e.result) for e in events) == [
        ("compute_shelve_instance", "Success"), ("compute_shelve_offload_instance", "Success")]
    for kind in ("shelve", "shelve_offload"):
        stack.wait(lambda kind=kind: stack.notifier.of(f"instance.{kind}.end"), what=kind)

    # Attach at 2.19 is refused; at 2.20 (200, no device) and 2.101 (202) it works.
    third = _new_volume(stack, "third")
    _attach(stack, server, third, "2.19", 409)
    _, body, _ = _attach(stack, server, third, "2.20", 200)
    assert body["volumeAttachment"]["device"] is None
    assert stack.cinder.get(None, third)["status"] == "in-use"
    fourth = _new_volume(stack, "fourth")
    _, body, _ = _attach(stack, server, fourth, "2.101", 202)
    assert body is None
    _volume_status(stack, fourth, "in-use")
    assert all(r[0]["connector"] is None for r in _attachments(stack, server).values())

    # Detach while offloaded: 409 below 2.20, then 202 and the volume is free.
    stack.api("DELETE", f"/servers/{server}/os-volume_attachments/{second}", version="2.19",
              token=TOKEN, status=409)
    stack.api("DELETE", f"/servers/{server}/os-volume_attachments/{second}", version="2.20",
              token=TOKEN, status=202)
    _volume_status(stack, second, "available")
    stack.wait(lambda: second not in _bdm_volumes(stack, server), what="BDM gone")
    _assert_offloaded(stack, server)

    _action(stack, server, {"unshelve": None})
    active = _assert_active_here(stack, server)
    assert active["OS-EXT-SRV-ATTR:host"] == HOST
    assert len(_domain_serials(stack, server)) == 3   # root, third, fourth
    assert third in _domain_serials(stack, server) and fourth in _domain_serials(stack, server)
    bdms = bdm_obj.list_by_instance(stack.db, stack.admin_context(), server)
    assert all(b.device_name and b.connection_info for b in bdms)
    assert len({b.device_name for b in bdms}) == 3
    stack.wait(lambda: stack.notifier.of("instance.unshelve.end"), what="unshelve.end")


def _shelved_here(stack):
    """A server shelved on its host and not offloaded (``shelved_offload_time`` -1)."""
    uuid = stack.boot(stack.context(), ROOT)
    stack.wait_instance(uuid, "active")
    _action(stack, uuid, {"shelve": None})
    stack.wait_for_server_status(uuid, "SHELVED")
    return uuid


def test_shelve_without_offload_then_offload_and_unshelve_in_place(tmp_path):
    stack = Stack(tmp_path, conf_overrides={(None, "shelved_offload_time"): -1})
    try:
        uuid = _shelved_here(stack)
        assert not _driver(stack).host.find_guest(uuid).is_active()
        _action(stack, uuid, {"unshelve": None})
        _assert_active_here(stack, uuid)

        _action(stack, uuid, {"shelve": None})
        stack.wait_for_server_status(uuid, "SHELVED")
        _action(stack, uuid, {"shelveOffload": None}, status=403)     # admin only
        _action(stack, uuid, {"shelveOffload": None}, token="admin:p1")
        stack.wait_for_server_status(uuid, "SHELVED_OFFLOADED")
        _assert_offloaded(stack, uuid)
        _action(stack, uuid, {"unshelve": None})
        _assert_active_here(stack, uuid)
    finally:
        stack.stop()


def test_periodic_offload_of_servers_shelved_too_long(tmp_path):
    from volumesvc.conductor.tasks import shelve as shelve_task

    stack = Stack(tmp_path, conf_overrides={(None, "shelved_offload_time"): 1,
                                            (None, "shelved_poll_interval"): 0})
    try:
        uuid = stack.boot(stack.context(), ROOT)
        stack.wait_instance(uuid, "active")
        _action(stack, uuid, {"shelve": None})
        stack.wait_for_server_status(uuid, "SHELVED")
        manager = stack.conductor.manager
        ctx = stack.admin_context()
        assert shelve_task.offload_expired(stack.conf, stack.db, manager._compute, ctx) == []
        import time
        time.sleep(1.2)
        assert shelve_task.offload_expired(stack.conf, stack.db, manager._compute,
                                           ctx) == [uuid]
        stack.wait_for_server_status(uuid, "SHELVED_OFFLOADED")
        _assert_offloaded(stack, uuid)
    finally:
        stack.stop()


# -- (5) a failure at each step of unshelve ------------------------------------------------


def _inject(stack, monkeypatch, step):
    """Make unshelve fail at ``step``; returns the text the fault must carry."""
    if step == "schedule":
        def no_host(*args, **kwargs):
            raise scheduling.NoValidHost(reason="injected: no host")
        monkeypatch.setattr(scheduling, "pick_host", no_host)
        return "injected: no host"
    cinder = stack.cinder
    if step == "connect":
        real = cinder.attachment_update
        calls = []

        def update(context, attachment_id, connector, mountpoint=None):
            calls.append(attachment_id)
            if len(calls) == 2:   # the first volume is connected, the second fails
                raise exception.CinderAPIError(code=500, reason="injected connect failure")
            return real(context, attachment_id, connector, mountpoint)
        monkeypatch.setattr(cinder, "attachment_update", update)
        return "injected connect failure"
    if step == "spawn":
        def spawn(instance, block_device_info):
            raise exception.VirtDriverError(reason="injected spawn failure")
        monkeypatch.setattr(_driver(stack), "spawn", spawn)
        return "injected spawn failure"
    if step == "complete":
        real_complete = cinder.attachment_complete
        calls = []

        def complete(context, attachment_id):
            calls.append(attachment_id)
            if len(calls) == 2:   # once: the first volume completed, the second not
                raise exception.CinderAPIError(code=500, reason="injected complete failure")
            return real_complete(context, attachment_id)
        monkeypatch.setattr(cinder, "attachment_complete", complete)
        return "injected complete failure"
    assert step == "activate"
    conductor = stack.computes[HOST].manager.lifecycle.conductor
    real_update = conductor.instance_update

    def instance_update(context, *, instance_uuid, values, **kwargs):
        if values.get("vm_state") == "active":
            raise exception.VolumesvcException("injected final save failure")
        return real_update(context, instance_uuid=instance_uuid, values=values, **kwargs)
    monkeypatch.setattr(conductor, "instance_update", instance_update)
    return "injected final save failure"


@pytest.mark.parametrize("step", ["schedule", "connect", "spawn", "complete", "activate"])
def test_unshelve_failure_at_each_step_keeps_every_attachment(stack, server, monkeypatch,
                                                              step):
    second = _new_volume(stack, "second")
    _attach(stack, server, second, "2.100", 200)
    _volume_status(stack, second, "in-use")
    _shelve_to_offloaded(stack, server)
    third = _new_volume(stack, "third")
    _attach(stack, server, third, "2.20", 200)
    before = _bdm_volumes(stack, server)
    assert len(before) == 3

    with monkeypatch.context() as patch:
        message = _inject(stack, patch, step)
        request_id = _action(stack, server, {"unshelve": None})[2]["x-openstack-request-id"]
        ctx = stack.context(request_id=request_id)
        events = stack.events(ctx, server, request_id)
    assert any(e.result == "Error" for e in events), [(e.event, e.result) for e in events]
    stack.wait(lambda: instance_obj.get_by_uuid(stack.db, stack.admin_context(),
                                                server).task_state is None,
               what="unshelve finished")
    server_view = stack.server(server)
    assert server_view["status"] == "SHELVED_OFFLOADED"
    fault = fault_obj.latest(stack.db, stack.admin_context(), server)
    assert fault is not None and message in fault.message
    assert _bdm_volumes(stack, server) == before
    _assert_offloaded(stack, server)
    for volume_id in before:
        assert stack.cinder.get(None, volume_id)["status"] in ("reserved", "in-use")

    # With the failure gone the same server unshelves with all its volumes.
    _action(stack, server, {"unshelve": None})
    _assert_active_here(stack, server)
    assert _domain_serials(stack, server) == before


def test_deleting_an_offloaded_server_releases_its_volumes(stack, server):
    kept = _new_volume(stack, "kept")
    _attach(stack, server, kept, "2.100", 200)
    _volume_status(stack, kept, "in-use")
    root = [v for v in _bdm_volumes(stack, server) if v != kept][0]
    _shelve_to_offloaded(stack, server)
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.wait_for_server_gone(server)
    _volume_status(stack, kept, "available")
    stack.wait(lambda: root not in stack.cinder.volumes, what="root volume deleted")
    assert _attachments(stack, server) == {}


def test_offloaded_attach_refusals_leave_nothing_behind(stack, server):
    _shelve_to_offloaded(stack, server)
    volume = _new_volume(stack)
    _attach(stack, server, volume, "2.20", 200)
    # The same volume again: 400 at the API (it has a BDM on this server).
    _, body, _ = _attach(stack, server, volume, "2.20", 400)
    assert "already attached" in body["badRequest"]["message"]
    # The conductor's own check (a duplicate racing past the API) rolls back.
    ctx = stack.context()
    with pytest.raises(exception.VolumeAlreadyAttached):
        stack.conductor_api().attach_volume(ctx, instance_uuid=server, volume_id=volume,
                                            wait=True)
    assert len(_attachments(stack, server)[volume]) == 1
    _assert_offloaded(stack, server)


def test_offload_failure_keeps_the_server_shelved_and_its_volumes_attached(stack, server,
                                                                         monkeypatch):
    data = _new_volume(stack)
    _attach(stack, server, data, "2.100", 200)
    _volume_status(stack, data, "in-use")
    real_create = stack.cinder.attachment_create
    calls = []

    def create(context, volume_id, instance_uuid, **kwargs):
        calls.append(volume_id)
        if len(calls) == 2:
            raise exception.CinderAPIError(code=503, reason="injected reserve failure")
        return real_create(context, volume_id, instance_uuid, **kwargs)
    monkeypatch.setattr(stack.cinder, "attachment_create", create)
    _action(stack, server, {"shelve": None})
    stack.wait(lambda: instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
               .task_state is None, what="shelve finished")
    inst = instance_obj.get_by_uuid(stack.db, stack.admin_context(), server)
    assert (inst.vm_state, inst.host) == ("shelved", HOST)
    assert "injected reserve failure" in fault_obj.latest(stack.db, stack.admin_context(),
                                                          server).message
    attachments = _attachments(stack, server)
    assert sorted(attachments) == _bdm_volumes(stack, server)
    assert all(len(records) == 1 for records in attachments.values())
    monkeypatch.undo()
    # Unshelved where it is, the server gets every disk back (one was disconnected).
    _action(stack, server, {"unshelve": None})
    _assert_active_here(stack, server)
    assert len(_domain_serials(stack, server)) == 2
    # Shelved again with the option at -1 it stays; an operator offloads it.
    stack.conf.set_override("shelved_offload_time", -1)
    _action(stack, server, {"shelve": None})
    stack.wait_for_server_status(server, "SHELVED")
    _action(stack, server, {"shelveOffload": None}, token="admin:p1")
    stack.wait_for_server_status(server, "SHELVED_OFFLOADED")
    _assert_offloaded(stack, server)
    _action(stack, server, {"unshelve": None})
    _assert_active_here(stack, server)


def test_a_cast_above_the_compute_cap_clears_the_task_with_a_fault(tmp_path, monkeypatch):
    """A stop that needed a newer compute RPC than ``[upgrade_levels] compute`` allows.

    Synthetic: the stop is sent as a 1.1 message while the cap stays at the
    1.0 baseline, so oslo.messaging refuses it before it leaves.
    """
    stack = Stack(tmp_path, conf_overrides={("upgrade_levels", "compute"): "1.0"})
    try:
        uuid = stack.boot(stack.context(), ROOT)
        stack.wait_instance(uuid, "active")
        compute = stack.conductor.manager._compute

        def newer_stop(ctxt, *, host, instance):
            compute._prepare(host, "1.1").cast(ctxt, "stop_instance", instance=instance)
        monkeypatch.setattr(compute, "stop_instance", newer_stop)
        request_id = _action(stack, uuid, {"os-stop": None})[2]["x-openstack-request-id"]
        events = stack.events(stack.context(request_id=request_id), uuid, request_id)
        assert [(e.event, e.result) for e in events] == [("conductor_stop_instance", "Error")]
        inst = instance_obj.get_by_uuid(stack.db, stack.admin_context(), uuid)
        assert (inst.vm_state, inst.task_state) == ("active", None)
        assert fault_obj.latest(stack.db, stack.admin_context(), uuid) is not None
    finally:
        stack.stop()



@pytest.mark.parametrize("before, body, dies_in, then", [
    (None, {"os-stop": None}, "power_off", "SHUTOFF"),
    ({"os-stop": None}, {"os-start": None}, "power_on", "ACTIVE"),
    (None, {"shelve": None}, "power_off", "SHELVED_OFFLOADED"),
    (None, {"shelve": None}, "destroy", "SHELVED_OFFLOADED"),
], ids=["stop", "start", "shelve", "offload"])
def test_a_step_whose_compute_died_is_done_again_when_the_compute_starts(
        stack, server, monkeypatch, before, body, dies_in, then):
    """Regression: the server stayed in its task (``powering-off``...) for ever.

    The compute dies in the driver call; its domain outlives it (the
    stopped compute's driver is reused). The compute started again does
    the step again, as Nova does at start, and the server settles.
    """
    if before is not None:
        _action(stack, server, before)
        stack.wait_for_server_status(server, "SHUTOFF")
    driver = _driver(stack)
    entered = killing.dies_in(monkeypatch, driver, dies_in)
    _action(stack, server, body)
    stack.wait(lambda: entered, what=f"the compute in {dies_in}")
    killing.stop_compute(stack, monkeypatch, HOST)
    stack.add_compute(HOST, driver=driver)

    shown = stack.wait_for_server_status(server, then)
    assert shown["OS-EXT-STS:task_state"] is None
    assert sorted(a["volume_id"] for a in stack.cinder.attachments.values()) == \
        _bdm_volumes(stack, server)


@pytest.mark.parametrize("dies_in, task", [("connect_volume", "unshelving"),
                                           ("spawn", "spawning")])
def test_an_unshelve_whose_compute_died_is_undone_when_the_compute_starts(
        stack, server, monkeypatch, dies_in, task):
    """Regression: the server stayed SHELVED_OFFLOADED / ``spawning`` for ever.

    Its root volume stayed ``attaching`` (connected to the host, never
    completed). The compute started again undoes the unshelve as a failed
    one: offloaded again with a fault saying why, every volume attached in
    Cinder without a connector; a second unshelve brings it up.
    """
    data = _new_volume(stack)
    _attach(stack, server, data, "2.101", 202)
    _volume_status(stack, data, "in-use")
    _shelve_to_offloaded(stack, server)
    driver = _driver(stack)
    entered = killing.dies_in(monkeypatch, driver, dies_in)
    _action(stack, server, {"unshelve": None})
    stack.wait(lambda: entered, what=f"the compute in {dies_in}")
    assert instance_obj.get_by_uuid(stack.db, stack.admin_context(),
                                    server).task_state == task
    killing.stop_compute(stack, monkeypatch, HOST)
    stack.add_compute(HOST, driver=driver)

    stack.wait_instance(server, "shelved_offloaded")
    _assert_offloaded(stack, server)
    fault = fault_obj.latest(stack.db, stack.admin_context(), server)
    assert f"The unshelve of instance {server} was interrupted" in fault.message
    assert task in fault.message
    for volume_id in _bdm_volumes(stack, server):
        assert stack.cinder.get(None, volume_id)["status"] == "reserved"

    _action(stack, server, {"unshelve": None})
    _assert_active_here(stack, server)


def test_a_delete_whose_compute_died_is_finished_when_the_compute_starts(
        stack, server, monkeypatch):
    """Regression: the server stayed ACTIVE / ``deleting`` for ever, its volumes in-use.

    The compute dies while it destroys the domain; the delete cast died
    with it. The compute started again finishes the delete, as Nova does
    at start: the domain and the record go, no attachment is left in
    Cinder, the data volume is ``available`` and the root volume made for
    the server is deleted with it.
    """
    data = _new_volume(stack)
    _attach(stack, server, data, "2.101", 202)
    _volume_status(stack, data, "in-use")
    volumes = _bdm_volumes(stack, server)
    driver = _driver(stack)
    entered = killing.dies_in(monkeypatch, driver, "destroy")
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.wait(lambda: entered, what="the compute in destroy")
    killing.stop_compute(stack, monkeypatch, HOST)
    stack.add_compute(HOST, driver=driver)

    stack.wait_for_server_gone(server)
    assert _xml(stack, server) == ""
    assert not _attachments(stack, server)
    # The root volume was made for the server (delete_on_termination): gone with it.
    assert [v for v in volumes if v in stack.cinder.volumes] == [data]
    assert stack.cinder.get(None, data)["status"] == "available"
    assert stack.notifier.of("instance.delete.end")


def test_a_delete_sent_while_the_compute_was_down_is_done_once(stack, server, monkeypatch,
                                                              caplog):
    """The delete asked again while the compute was down waits in its queue.

    The restarted compute finishes the delete before it takes its queue;
    the waiting cast then finds the delete done and is skipped, instead of
    taking apart, a second time, a server that no longer exists.
    """
    caplog.set_level(logging.INFO, logger="volumesvc.compute.manager")
    driver = _driver(stack)
    entered = killing.dies_in(monkeypatch, driver, "destroy")
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.wait(lambda: entered, what="the compute in destroy")
    killing.stop_compute(stack, monkeypatch, HOST)
    # The compute still counts as up (its last heartbeat is recent): the
    # conductor casts the delete to its queue.
    stack.api("DELETE", f"/servers/{server}", token=TOKEN, status=204)
    stack.add_compute(HOST, driver=driver)

    stack.wait_for_server_gone(server)
    stack.wait(lambda: "duplicate skipped" in caplog.text, what="the queued delete skipped")
    # Started by the killed process and by the restarted one's start-up pass only.
    assert len(stack.notifier.of("instance.delete.start")) == 2
    assert len(stack.notifier.of("instance.delete.end")) == 1
    assert not _attachments(stack, server)


def test_an_unshelve_in_place_whose_compute_died_is_done_again_when_it_starts(
        tmp_path, monkeypatch):
    """A server shelved on its host (never offloaded) keeps its domain: started again."""
    stack = Stack(tmp_path, conf_overrides={(None, "shelved_offload_time"): -1})
    try:
        uuid = _shelved_here(stack)
        driver = _driver(stack)
        entered = killing.dies_in(monkeypatch, driver, "power_on")
        _action(stack, uuid, {"unshelve": None})
        stack.wait(lambda: entered, what="the compute in power_on")
        killing.stop_compute(stack, monkeypatch, HOST)
        stack.add_compute(HOST, driver=driver)

        stack.wait_instance(uuid, "active")
        _assert_active_here(stack, uuid)
    finally:
        stack.stop()
