"""Conductor + compute build, reboot and delete on fake:// (rows made directly).

The API's POST /servers is tested separately; here the conductor receives
the same cast the API sends, so each step of the build is visible.
"""


from tests.functional.stack import Stack
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_fault as fault_obj


def _ctx(project="p1"):
    return Stack.context(project)


def test_blank_volume_of_a_type_is_created_attached_and_booted(stack):
    ctx = _ctx()
    stack.cinder.create_volume_type("gold")
    uuid = stack.boot(ctx, [{"source_type": "blank", "destination_type": "volume",
                               "boot_index": 0, "volume_size": 1, "volume_type": "gold",
                               "delete_on_termination": True}])
    inst = stack.wait_instance(uuid, "active")
    assert inst.host == "fn-compute" and inst.power_state == 1 and inst.launched_at
    (bdm,) = bdm_obj.list_by_instance(stack.db, ctx, uuid)
    volume = stack.cinder.get(ctx, bdm.volume_id)
    assert volume["volume_type"] == "gold" and volume["size"] == 1
    assert volume["status"] == "in-use"
    assert bdm.attachment_id and bdm.device_name == "/dev/sda"
    assert inst.root_device_name == "/dev/sda"
    driver = stack.computes["fn-compute"].manager.driver
    xml = driver.get_domain_xml({"uuid": uuid})
    assert f"<serial>{bdm.volume_id}</serial>" in xml
    events = stack.events(ctx, uuid)
    assert [(e.event, e.result) for e in events] == [
        ("compute_build_and_run_instance", "Success")]
    stack.wait(lambda: stack.notifier.of("instance.create.end"), what="create.end")
    (start,) = stack.notifier.of("instance.create.start")
    (end,) = stack.notifier.of("instance.create.end")
    # The blank volume has no id before the build made it (Nova's start lists none then).
    assert start["nova_object.data"]["block_devices"] == []
    (device,) = end["nova_object.data"]["block_devices"]
    assert device["nova_object.data"]["volume_id"] == bdm.volume_id

    # Reboot (both kinds) keeps it active.
    for kind, task in (("SOFT", "rebooting"), ("HARD", "rebooting_hard")):
        instance_obj.save(stack.db, ctx, uuid, {"task_state": task})
        stack.conductor_api().reboot_instance(
            ctx, instance_uuid=uuid, reboot_type=kind)
        stack.wait_instance(uuid, "active")

    # Delete: the domain goes, the delete_on_termination volume goes.
    instance_obj.save(stack.db, ctx, uuid, {"task_state": "deleting"})
    stack.conductor_api().delete_instance(
        ctx, instance_uuid=uuid)
    stack.wait(lambda: bdm.volume_id not in stack.cinder.volumes, what="volume deleted")
    stack.wait(lambda: instance_obj.list_instances(stack.db, ctx, deleted=True),
               what="instance deleted")
    assert uuid not in driver.list_instance_uuids()


def test_failed_build_goes_error_and_leaks_nothing(stack):
    ctx = _ctx("p2")
    # A multiattach volume on a host whose driver lacks multiattach fails the build.
    stack.cinder.create_volume_type("multi", {"multiattach": "<is> True"})
    uuid = stack.boot(ctx, [
        {"source_type": "blank", "destination_type": "volume", "boot_index": 0,
         "volume_size": 1, "volume_type": "multi", "delete_on_termination": True},
        {"source_type": "blank", "destination_type": "volume", "boot_index": 1,
         "volume_size": 1, "delete_on_termination": False},
    ])
    stack.computes["fn-compute"].manager.driver.capabilities["supports_multiattach"] = False
    inst = stack.wait_instance(uuid, "error")
    assert inst.vm_state == "error"
    fault = fault_obj.latest(stack.db, ctx, uuid)
    assert "multiattach" in fault.message.lower()
    bdms = bdm_obj.list_by_instance(stack.db, ctx, uuid)
    assert all(b.attachment_id is None for b in bdms)
    assert not stack.cinder.attachments
    kept = [v for v in stack.cinder.volumes.values() if v["name"].endswith("blank-vol")]
    assert [v["status"] for v in kept] == ["available"]  # not delete_on_termination
    events = stack.events(ctx, uuid)
    assert events[0].result == "Error" and "multiattach" in (events[0].details or "").lower()


def test_no_valid_host_when_no_compute_is_up(tmp_path):
    stack = Stack(tmp_path, hosts=())
    try:
        ctx = _ctx("p3")
        uuid = stack.boot(ctx, [{"source_type": "blank", "destination_type": "volume",
                                   "boot_index": 0, "volume_size": 1}])
        inst = stack.wait_instance(uuid, "error")
        assert "No valid host" in fault_obj.latest(stack.db, ctx, uuid).message
        assert inst.host is None
    finally:
        stack.stop()


def test_image_backed_local_root_disk(stack):
    ctx = _ctx("p4")
    image = stack.glance.create(ctx, name="tiny", owner="p4", data=b"\0" * 4096)
    uuid = stack.boot(ctx, [{"source_type": "image", "destination_type": "local",
                               "boot_index": 0, "image_id": image["id"],
                               "delete_on_termination": True}])
    inst = stack.wait_instance(uuid, "active")
    (bdm,) = bdm_obj.list_by_instance(stack.db, ctx, uuid)
    path = f"{stack.conf.state_path}/instances/{uuid}/disk"
    assert bdm.device_name == "/dev/sda" and inst.root_device_name == "/dev/sda"
    xml = stack.computes["fn-compute"].manager.driver.get_domain_xml({"uuid": uuid})
    assert path in xml
    import os
    assert os.path.getsize(path) == 1 << 30  # grown to the flavor's 1 GB root disk
    instance_obj.save(stack.db, ctx, uuid, {"task_state": "deleting"})
    stack.conductor_api().delete_instance(
        ctx, instance_uuid=uuid)
    stack.wait(lambda: not os.path.exists(path), what="instance dir removed")


def test_delete_keeps_going_when_a_volume_cannot_be_deleted(stack):
    """Regression: a volume with snapshots (createImage) made the delete fail (ERROR)."""
    ctx = _ctx("p5")
    uuid = stack.boot(ctx, [{"source_type": "blank", "destination_type": "volume",
                               "boot_index": 0, "volume_size": 1,
                               "delete_on_termination": True}])
    stack.wait_instance(uuid, "active")
    (bdm,) = bdm_obj.list_by_instance(stack.db, ctx, uuid)
    stack.cinder.create_snapshot_force(ctx, bdm.volume_id)
    instance_obj.save(stack.db, ctx, uuid, {"task_state": "deleting"})
    stack.conductor_api().delete_instance(
        ctx, instance_uuid=uuid)
    stack.wait(lambda: instance_obj.list_instances(stack.db, ctx, deleted=True),
               what="instance deleted")
    volume = stack.cinder.get(ctx, bdm.volume_id)
    assert volume["status"] == "available" and not volume["attachments"]


def test_boot_and_delete_of_a_new_volume_ask_cinder_only_what_they_need(stack):
    """Cinder requests per boot and per delete (issue 15: in a boot storm every
    request queues in the one cinder-api process).

    The boot reads the new volume only while waiting for it (never, here:
    FakeCinder's volumes are ``available`` in create's answer) and not again
    before the attachment; the delete reads it once, after deleting the
    attachment, and that read already allows the volume's delete.
    """
    ctx = _ctx("p-count")
    stack.cinder.create_volume_type("gold")
    del stack.cinder.calls[:]
    uuid = stack.boot(ctx, [{"source_type": "blank", "destination_type": "volume",
                               "boot_index": 0, "volume_size": 1, "volume_type": "gold",
                               "delete_on_termination": True}])
    stack.wait_instance(uuid, "active")
    boot = [method for method, _ in stack.cinder.calls]
    assert sorted(boot) == ["attachment_complete", "attachment_create", "attachment_update",
                            "create"], boot
    (bdm,) = bdm_obj.list_by_instance(stack.db, ctx, uuid)
    del stack.cinder.calls[:]
    instance_obj.save(stack.db, ctx, uuid, {"task_state": "deleting"})
    stack.conductor_api().delete_instance(ctx, instance_uuid=uuid)
    stack.wait(lambda: instance_obj.list_instances(stack.db, ctx, deleted=True),
               what="instance deleted")
    assert bdm.volume_id not in stack.cinder.volumes
    delete = [method for method, _ in stack.cinder.calls]
    assert delete.count("get") == 1, delete
    assert delete.count("delete") == 1 and delete.count("attachment_delete") == 1, delete


def test_a_compute_runs_at_most_max_concurrent_builds_at_once(tmp_path):
    """Issue 15: 100 builds at once made Cinder's scheduler exhaust MariaDB and
    PostgreSQL run out of clients (volumes stuck creating, servers ERROR).
    Builds past ``[compute] max_concurrent_builds`` wait their turn; all finish."""
    import threading
    import time

    s = Stack(tmp_path, conf_overrides={("compute", "max_concurrent_builds"): 2})
    try:
        driver = s.computes["fn-compute"].manager.driver
        real_spawn = driver.spawn
        cond, running, peak = threading.Condition(), [0], [0]

        def spawn(instance, block_device_info):
            # Each build waits (bounded) for a second one to be running, so the
            # peak is 2 however slowly a loaded machine delivers the casts; a
            # limit that did not hold would let the waiting builds pile up past 2.
            with cond:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                cond.notify_all()
                cond.wait_for(lambda: running[0] >= 2, timeout=5)
            time.sleep(0.2)
            with cond:
                running[0] -= 1
            return real_spawn(instance, block_device_info)

        driver.spawn = spawn
        uuids = s.boot_active(count=6)
        assert len(uuids) == 6
        assert peak[0] == 2
    finally:
        s.stop()


class _Killed(BaseException):
    """The compute process dying: no handler of the build runs any more."""


def test_a_build_whose_compute_died_is_ended_in_error_when_the_compute_starts(
        stack, monkeypatch):
    """Regression: the server stayed BUILD (``spawning``) for ever after its compute came back.

    The compute dies in the driver's spawn; the compute started again puts
    the server in ERROR with a fault saying why and undoes the build as a
    failed one is undone: the root volume, connected but never completed,
    stayed ``attaching`` for ever; now its attachment is gone with the BDM's.
    """
    ctx = _ctx("p3")
    spawning = []

    def die(*args):
        spawning.append(args)
        raise _Killed()
    monkeypatch.setattr(stack.computes["fn-compute"].manager.driver, "spawn", die)
    uuid = stack.boot(ctx, [{"source_type": "blank", "destination_type": "volume",
                             "boot_index": 0, "volume_size": 1,
                             "delete_on_termination": True}])
    stack.wait(lambda: spawning, what="the build in the driver's spawn")
    assert instance_obj.get_by_uuid(stack.db, ctx, uuid).task_state == "spawning"
    monkeypatch.undo()
    stack.computes.pop("fn-compute").stop()
    stack.add_compute("fn-compute")

    inst = stack.wait_instance(uuid, "error")
    assert inst.task_state is None
    fault = fault_obj.latest(stack.db, ctx, uuid)
    assert f"The build of instance {uuid} was interrupted" in fault.message
    assert "spawning" in fault.message
    (bdm,) = bdm_obj.list_by_instance(stack.db, ctx, uuid)
    assert bdm.attachment_id is None
    assert not [a for a in stack.cinder.attachments.values() if a["volume_id"] == bdm.volume_id]
    assert stack.cinder.get(ctx, bdm.volume_id)["status"] == "available"
    stack.wait(lambda: stack.notifier.of("instance.create.error"), what="create.error")

    instance_obj.save(stack.db, ctx, uuid, {"task_state": "deleting"})
    stack.conductor_api().delete_instance(ctx, instance_uuid=uuid)
    stack.wait(lambda: bdm.volume_id not in stack.cinder.volumes, what="root volume deleted")
