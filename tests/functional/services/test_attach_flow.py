"""The attach workflow (conductor task + compute) and detach, on fake://.

Called as the API calls it: ``wait=True`` below 2.101, a cast from 2.101.
Every failure must leave no BDM without a Cinder attachment and no Cinder
attachment without a BDM, and say why in the instance actions.
"""

import pytest

from tests.fixtures import virt as virt_fixtures
from tests.functional.stack import BLANK_ROOT as ROOT
from tests.functional.stack import Stack
from volumesvc import exception
from volumesvc.objects import block_device as bdm_obj
from volumesvc.virt import fake as fake_libvirt
from volumesvc.virt.libvirt.volume import brick


@pytest.fixture
def server(stack):
    ctx = stack.context()
    uuid = stack.boot(ctx, ROOT)
    stack.wait_instance(uuid, "active")
    return uuid


def _no_leaks(stack, ctx, uuid, volume_id):
    """Neither side keeps anything of the attachment (waits for the cast to finish)."""
    def clean():
        bdms = [b for b in bdm_obj.list_by_instance(stack.db, ctx, uuid)
                if b.volume_id == volume_id]
        atts = [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume_id]
        return not bdms and not atts
    stack.wait(clean, what=f"no BDM and no attachment for {volume_id}")
    assert stack.cinder.get(ctx, volume_id)["status"] == "available"


def _xml(stack, uuid):
    return stack.computes["fn-compute"].manager.driver.get_domain_xml({"uuid": uuid})


@pytest.mark.parametrize("wait", [True, False], ids=["call-2.100", "cast-2.101"])
def test_attach_then_detach(stack, server, wait):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    result = stack.conductor_api().attach_volume(
        ctx, instance_uuid=server, volume_id=volume["id"], tag="t1", wait=wait)
    if wait:
        assert result["device_name"] == "/dev/sdb" and result["attachment_id"]
    else:
        assert result is None
    # The compute reports once, after Cinder's attachment_complete (in-use).
    stack.wait(lambda: [b.attach_status for b in bdm_obj.list_by_volume(
        stack.db, ctx, volume["id"])] == ["attached"], what="attached")
    assert stack.cinder.get(ctx, volume["id"])["status"] == "in-use"
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, ctx, volume["id"], server)
    assert bdm.device_name == "/dev/sdb" and bdm.tag == "t1" and bdm.connection_info
    assert f"<serial>{volume['id']}</serial>" in _xml(stack, server)
    events = stack.events(ctx, server)
    assert [(e.event, e.result) for e in events] == [("compute_attach_volume", "Success")]
    stack.wait(lambda: stack.notifier.of("instance.volume_attach.end"), what="attach.end")

    detach_ctx = stack.context()
    stack.cinder.begin_detaching(detach_ctx, volume["id"])
    stack.conductor_api().detach_volume(detach_ctx, instance_uuid=server,
                                        volume_id=volume["id"], attachment_id=bdm.attachment_id)
    stack.wait(lambda: stack.cinder.get(ctx, volume["id"])["status"] == "available",
               what="available")
    _no_leaks(stack, ctx, server, volume["id"])
    assert volume["id"] not in _xml(stack, server)


def test_duplicate_attach_is_refused_synchronously_below_2_101(stack, server):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    stack.conductor_api().attach_volume(ctx, instance_uuid=server, volume_id=volume["id"],
                                        wait=True)
    with pytest.raises(exception.VolumeAlreadyAttached):
        stack.conductor_api().attach_volume(stack.context(), instance_uuid=server,
                                            volume_id=volume["id"], wait=True)


def test_libvirt_attach_failure_rolls_back_and_says_why(stack, server, monkeypatch):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    driver = stack.computes["fn-compute"].manager.driver

    def refuse(*args, **kwargs):
        raise fake_libvirt.libvirtError("internal error: unable to execute QEMU command")
    monkeypatch.setattr(driver.host.get_connection().lookupByUUIDString(server),
                        "attachDeviceFlags", refuse)
    stack.conductor_api().attach_volume(ctx, instance_uuid=server, volume_id=volume["id"])
    events = stack.events(ctx, server)
    assert events[0].event == "compute_attach_volume" and events[0].result == "Error"
    assert "QEMU" in events[0].details
    _no_leaks(stack, ctx, server, volume["id"])
    assert stack.notifier.of("instance.volume_attach.error")


def test_cinder_refusing_the_attachment_rolls_back_and_says_why(stack, server):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    other = stack.cinder.attachment_create(ctx, volume["id"], "another-server")
    stack.cinder.attachment_update(ctx, other["id"], {"host": "elsewhere"})
    stack.cinder.attachment_complete(ctx, other["id"])   # in-use elsewhere, not multiattach
    stack.conductor_api().attach_volume(ctx, instance_uuid=server, volume_id=volume["id"])
    events = stack.events(ctx, server)
    assert (events[0].event, events[0].result) == ("conductor_attach_volume", "Error")
    assert volume["id"] in events[0].details
    assert [b for b in bdm_obj.list_by_instance(stack.db, ctx, server)
            if b.volume_id == volume["id"]] == []
    assert [a["id"] for a in stack.cinder.attachments.values()
            if a["volume_id"] == volume["id"]] == [other["id"]]


def test_capability_refusal_from_the_computes_report(stack, server):
    """The conductor refuses from the capabilities the compute reported with its heartbeat."""
    ctx = stack.context()
    stack.computes["fn-compute"].manager.driver.capabilities["supports_tagged_attach_volume"] \
        = False
    stack.computes["fn-compute"].report_state()
    volume = stack.cinder.create(ctx, 1, "data", "")
    with pytest.raises(exception.TaggedAttachmentNotSupported):
        stack.conductor_api().attach_volume(ctx, instance_uuid=server,
                                            volume_id=volume["id"], tag="x", wait=True)
    _no_leaks(stack, ctx, server, volume["id"])


def test_compute_down_is_refused_at_once_and_recorded(stack, server):
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    stack.computes["fn-compute"].stop()
    stack.conf.set_override("service_down_time", 1)
    stack.conf.set_override("host_probe_timeout", 1, group="compute")
    import time
    time.sleep(1.5)
    with pytest.raises(exception.ComputeHostDown):
        stack.conductor_api().attach_volume(ctx, instance_uuid=server,
                                            volume_id=volume["id"], wait=True)
    events = stack.events(ctx, server)
    assert (events[0].event, events[0].result) == ("conductor_attach_volume", "Error")
    assert "is not up" in events[0].details
    _no_leaks(stack, ctx, server, volume["id"])


def test_a_compute_that_only_looks_down_is_asked_before_refusing(stack, server):
    """Regression: after a conductor outage every compute looks down (no beats)."""
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    import time
    # Heartbeats stop (next one in an hour); the compute still serves RPC.
    stack.computes["fn-compute"].conf.set_override("report_interval", 3600)
    time.sleep(1.2)
    stack.conf.set_override("service_down_time", 1)
    time.sleep(1.5)
    bdm = stack.conductor_api().attach_volume(ctx, instance_uuid=server,
                                              volume_id=volume["id"], wait=True)
    assert bdm["device_name"] == "/dev/sdb"


def test_an_api_attach_costs_four_cinder_calls(stack, server):
    """API get, attachment create, update, complete: nobody asks about the volume twice."""
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    stack.cinder.calls.clear()
    stack.api("POST", f"/servers/{server}/os-volume_attachments",
              {"volumeAttachment": {"volumeId": volume["id"]}}, version="2.101", status=202)
    # Poll the fake's state directly: polling through its API would add calls.
    stack.wait(lambda: stack.cinder.volumes[volume["id"]]["status"] == "in-use",
               what="in-use")
    names = [name for name, _args in stack.cinder.calls]
    assert names == ["get", "attachment_create", "attachment_update", "attachment_complete"]


def test_an_attach_storm_larger_than_the_conductor_thread_pool(tmp_path, monkeypatch):
    """Regression: >pool-size attach casts took every conductor thread, each waiting
    on a compute whose call-backs queued behind them; nothing moved until timeouts.
    """
    # A slow compute host, loaded by name as a separate process would load it.
    monkeypatch.setenv(virt_fixtures.ATTACH_DELAY_ENV, "0.05")
    stack = Stack(tmp_path, conf_overrides={
        (None, "executor_thread_pool_size"): 4,
        (None, "rpc_response_timeout"): 10,
        (None, "compute_driver"): "tests.fixtures.virt:SlowAttachDriver"})
    try:
        assert stack.computes["fn-compute"].manager.driver.attach_delay == 0.05
        ctx = stack.context()
        servers = []
        for _ in range(3):
            uuid = stack.boot(stack.context(), ROOT)
            servers.append(uuid)
        for uuid in servers:
            stack.wait_instance(uuid, "active")
        volumes = [stack.cinder.create(ctx, 1, f"v{i}", "") for i in range(12)]
        for i, volume in enumerate(volumes):
            stack.conductor_api().attach_volume(
                stack.context(), instance_uuid=servers[i % 3], volume_id=volume["id"])
        stack.wait(lambda: all(stack.cinder.volumes[v["id"]]["status"] == "in-use"
                               for v in volumes), timeout=30, what="all 12 in-use")
    finally:
        stack.stop()


def _counting(made, name, real):
    """Count the attach's calls; the build's own event can still finish after ACTIVE."""
    def call(*args, **kwargs):
        if kwargs.get("event", "compute_attach_volume") == "compute_attach_volume":
            made.append(name)
        return real(*args, **kwargs)
    return call


def test_attach_reports_attached_and_its_event_in_one_call(tmp_path):
    """One round trip from the compute per attach.

    The conductor made the BDM and started the compute's event with the
    action; the compute's one report carries the connection, ``attached``
    and the event's finish: the status ends ``attached`` and the event
    Success, with a start and a finish time and the compute's host.
    """
    stack = Stack(tmp_path)
    try:
        ctx = stack.context()
        server = stack.boot(ctx, ROOT)
        stack.wait_instance(server, "active")
        client = stack.computes["fn-compute"].manager.conductor
        made = []
        for name in ("bdm_list", "bdm_create", "bdm_update", "action_event_start",
                     "action_event_finish"):
            setattr(client, name, _counting(made, name, getattr(client, name)))
        volume = stack.cinder.create(ctx, 1, "data", "")
        stack.conductor_api().attach_volume(ctx, instance_uuid=server, volume_id=volume["id"])
        stack.wait(lambda: stack.notifier.of("instance.volume_attach.end"), what="attach.end")
        bdm = bdm_obj.get_by_volume_and_instance(stack.db, ctx, volume["id"], server)
        assert bdm.attach_status == "attached"
        events = stack.events(ctx, server)
        assert [(e.event, e.result) for e in events] == [("compute_attach_volume", "Success")]
        assert events[0].start_time and events[0].finish_time
        assert events[0].host == "fn-compute"
        assert made == ["bdm_update"]
    finally:
        stack.stop()


def test_a_cast_that_never_left_finishes_the_started_compute_event(stack, server, monkeypatch):
    """The conductor started compute_attach_volume; a lost cast ends it Error."""
    ctx = stack.context()
    volume = stack.cinder.create(ctx, 1, "data", "")
    compute_api = stack.conductor.manager._compute

    def lost(*args, **kwargs):
        raise RuntimeError("bus gone")
    monkeypatch.setattr(compute_api, "attach_volume", lost)
    stack.conductor_api().attach_volume(ctx, instance_uuid=server, volume_id=volume["id"])
    expected = {"compute_attach_volume": "Error", "conductor_attach_volume": "Error"}

    def both_finished():
        # One event can be finished before the other is recorded (a loaded machine).
        events = {e.event: e.result for e in stack.events(ctx, server)}
        return events if len(events) == len(expected) else None
    assert stack.wait(both_finished, what="both events finished") == expected
    _no_leaks(stack, ctx, server, volume["id"])


def test_a_status_report_is_saved_when_its_event_is_gone(stack, server):
    """bdm_update(finish_event=...) is one transaction; a missing action does not undo the save."""
    ctx = stack.context()
    bdm = bdm_obj.create(stack.db, ctx, {
        "instance_uuid": server, "source_type": "volume", "destination_type": "volume",
        "volume_id": "v-1", "device_name": "/dev/sdz", "attach_status": "attaching"})
    manager = stack.conductor.manager
    saved = manager.bdm_update(
        ctx, bdm_uuid=bdm.uuid, values={"attach_status": "attached"},
        expected_status="attaching",
        finish_event={"instance_uuid": server, "request_id": "req-none",
                      "event": "compute_attach_volume", "result": "Success"})
    assert saved["attach_status"] == "attached"
    assert bdm_obj.get_by_uuid(stack.db, ctx, bdm.uuid).attach_status == "attached"


def test_the_connector_is_reused_across_attaches_and_built_again_after_a_failed_one(
        stack, server, monkeypatch):
    """os-brick builds the host's connector for the first attach only, and again
    after an attach failed (stale host properties may be why)."""
    ctx = stack.context()
    builds = []
    real = brick.connector_properties

    def counted(conf):
        builds.append(conf.host)
        return real(conf)
    monkeypatch.setattr(brick, "connector_properties", counted)
    driver = stack.computes["fn-compute"].manager.driver
    driver.forget_volume_connector()  # the boot built one already

    def attach(attach_ctx=ctx):
        volume_id = stack.cinder.create(ctx, 1, "data", "")["id"]
        stack.conductor_api().attach_volume(attach_ctx, instance_uuid=server,
                                            volume_id=volume_id, wait=True)
        return volume_id

    def in_use(volume_id):
        stack.wait(lambda: stack.cinder.get(ctx, volume_id)["status"] == "in-use",
                   what=f"{volume_id} in-use")

    for _ in range(3):
        in_use(attach())
    assert builds == ["fn-compute"]

    domain = driver.host.get_connection().lookupByUUIDString(server)

    def refuse(*args, **kwargs):
        raise fake_libvirt.libvirtError("internal error: unable to execute QEMU command")
    with monkeypatch.context() as refusing:
        refusing.setattr(domain, "attachDeviceFlags", refuse)
        failing_ctx = stack.context()
        failed = attach(failing_ctx)
        assert [(e.event, e.result) for e in stack.events(failing_ctx, server)] == [
            ("compute_attach_volume", "Error")]
        _no_leaks(stack, ctx, server, failed)
    assert builds == ["fn-compute"]  # the failed attach still used the kept one

    last = attach()
    in_use(last)
    assert builds == ["fn-compute", "fn-compute"]
    connector = next(a["connector"] for a in stack.cinder.attachments.values()
                     if a["volume_id"] == last)
    assert connector["host"] == "fn-compute" and connector["ip"] == stack.conf.my_ip
