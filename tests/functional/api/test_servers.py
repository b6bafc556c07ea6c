"""What POST /servers leaves behind (rows, Cinder, conductor casts) and exact server keys.

HTTP journeys are in test_servers_*_2_*.py and test_servers_ips_disk_config.py; these
tests look inside the doubles: the request_spec and BDM rows the conductor receives, the
Cinder attachments, and the exact key set of a server per microversion.
"""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServersWorld as world
from volumesvc import context as vs_context
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action

ALICE = {"X-Auth-Token": "alice:7e57000000000000000000000000a11c"}
ADMIN = {"X-Auth-Token": "admin:admin-project"}


@pytest.fixture
def api():
    with fixtures.open_world(world) as (app, deps):
        yield app.test_client(), deps


def _post(client, server, version="2.67", headers=ALICE):
    return client.post("/v2.1/servers", json={"server": server},
                       headers={**headers, "OpenStack-API-Version": f"compute {version}"})


def _get(client, path, version, headers=ALICE):
    return client.get(path, headers={**headers, "OpenStack-API-Version": f"compute {version}"})


def _bdms(deps, uuid):
    return bdm_obj.list_by_instance(deps.db, vs_context.get_admin_context(), uuid)


def test_boot_from_source_volume_reserves_it_and_casts(api):
    client, deps = api
    resp = _post(client, {"name": "bfv", "flavorRef": "101", "networks": "none",
                          "block_device_mapping_v2": [{
                              "source_type": "volume", "uuid": world.VOL_MULTI,
                              "destination_type": "volume", "boot_index": "0",
                              "delete_on_termination": "yes", "tag": "root"}]})
    assert resp.status_code == 202, resp.json
    uuid = resp.json["server"]["id"]
    assert resp.headers["Location"].endswith(f"/v2.1/servers/{uuid}")
    (bdm,) = _bdms(deps, uuid)
    attachment = deps.cinder.attachments[bdm.attachment_id]
    assert (attachment["instance"], attachment["status"]) == (uuid, "reserved")
    assert deps.cinder.volumes[world.VOL_MULTI]["status"] == "reserved"
    assert (bdm.source_type, bdm.destination_type, bdm.volume_id, bdm.boot_index,
            bdm.volume_size, bdm.delete_on_termination, bdm.tag, bdm.volume_type) == (
        "volume", "volume", world.VOL_MULTI, 0, 2, True, "root", None)
    (cast,) = deps.conductor.casts
    assert cast[0] == "build_instances"
    assert cast[1]["instance_uuids"] == [uuid]
    spec = cast[1]["request_spec"]
    assert spec["needs"] == ["supports_multiattach"]
    assert spec["image"] is None and spec["availability_zone"] is None
    assert spec["flavor"]["flavorid"] == "101"
    instance = instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(), uuid)
    assert (instance.vm_state, instance.task_state, instance.power_state) == (
        "building", "scheduling", 0)
    assert instance.reservation_id.startswith("r-") and instance.launch_index == 0
    assert instance.hostname == "bfv" and instance.flavor["name"] == "test.small"
    actions = instance_action.list_actions(deps.db, vs_context.get_admin_context(), uuid)
    assert [a.action for a in actions] == ["create"]


def test_volume_types_are_stored_by_name_on_every_instance(api):
    client, deps = api
    resp = _post(client, {"name": "many", "flavorRef": "101", "networks": "none",
                          "max_count": 2, "return_reservation_id": "True",
                          "block_device_mapping_v2": [
                              {"source_type": "image", "uuid": world.IMAGE,
                               "destination_type": "volume", "boot_index": 0,
                               "volume_size": 3, "volume_type": world.TYPE_FAST},
                              {"source_type": "snapshot", "uuid": world.SNAPSHOT,
                               "destination_type": "volume", "boot_index": 1,
                               "volume_type": "shared"},
                              {"source_type": "blank", "destination_type": "volume",
                               "volume_size": 1}]})
    assert resp.status_code == 202, resp.json
    assert list(resp.json) == ["reservation_id"]
    (cast,) = deps.conductor.casts
    uuids = cast[1]["instance_uuids"]
    assert len(uuids) == 2
    assert cast[1]["request_spec"]["needs"] == ["supports_multiattach"]
    seen = set()
    for index, uuid in enumerate(uuids):
        rows = _bdms(deps, uuid)
        seen |= {row.uuid for row in rows}
        assert [(r.source_type, r.volume_type, r.volume_size, r.boot_index, r.image_id,
                 r.snapshot_id, r.attachment_id) for r in rows] == [
            ("image", "fast", 3, 0, world.IMAGE, None, None),
            ("snapshot", "shared", 2, 1, None, world.SNAPSHOT, None),
            ("blank", None, 1, -1, None, None, None)]
        instance = instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(), uuid)
        assert instance.display_name == f"many-{index + 1}"
        assert instance.launch_index == index
    assert len(seen) == 6
    # No source volume, so nothing was reserved in Cinder.
    assert deps.cinder.attachments == {}


def test_max_count_above_the_per_request_limit_is_lowered_to_it(api):
    """As Nova lowers max_count to what the instance quota allows."""
    client, deps = api
    deps.conf.set_override("max_servers_per_request", 3, group="api")
    resp = _post(client, {"name": "capped", "flavorRef": "101", "networks": "none",
                          "min_count": 2, "max_count": 50, "return_reservation_id": True,
                          "block_device_mapping_v2": [
                              {"source_type": "blank", "destination_type": "volume",
                               "boot_index": 0, "volume_size": 1}]})
    assert resp.status_code == 202, resp.json
    (cast,) = deps.conductor.casts
    assert len(cast[1]["instance_uuids"]) == 3
    resp = _post(client, {"name": "refused", "flavorRef": "101", "networks": "none",
                          "min_count": 4, "block_device_mapping_v2": [
                              {"source_type": "blank", "destination_type": "volume",
                               "boot_index": 0, "volume_size": 1}]})
    assert resp.status_code == 403
    assert resp.json["forbidden"]["message"] == (
        "Requested 4 servers in one request, but at most 3 may be created at once.")
    assert len(deps.conductor.casts) == 1


def test_snapshot_image_mappings_are_used_as_requested(api):
    client, deps = api
    resp = _post(client, {"name": "snap", "flavorRef": "101", "networks": "none",
                          "imageRef": world.IMAGE_BFV_SNAPSHOT})
    assert resp.status_code == 202, resp.json
    (cast,) = deps.conductor.casts
    (uuid,) = cast[1]["instance_uuids"]
    assert cast[1]["request_spec"]["image"]["id"] == world.IMAGE_BFV_SNAPSHOT
    (bdm,) = _bdms(deps, uuid)
    assert (bdm.source_type, bdm.destination_type, bdm.snapshot_id, bdm.volume_type,
            bdm.volume_size, bdm.boot_index, bdm.device_name, bdm.delete_on_termination) == (
        "snapshot", "volume", world.SNAPSHOT, "fast", 3, 0, "/dev/vda", True)


def test_image_boot_gets_a_local_root_disk(api):
    client, deps = api
    resp = _post(client, {"name": "Web Server_1", "flavorRef": "101",
                          "imageRef": world.IMAGE}, version="2.1")
    assert resp.status_code == 202, resp.json
    assert len(resp.json["server"]["adminPass"]) == 12
    uuid = resp.json["server"]["id"]
    (bdm,) = _bdms(deps, uuid)
    assert (bdm.source_type, bdm.destination_type, bdm.image_id, bdm.boot_index,
            bdm.delete_on_termination) == ("image", "local", world.IMAGE, 0, True)
    instance = instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(), uuid)
    assert instance.hostname == "web-server-1"


@pytest.mark.parametrize("template, expected", [
    ("instance-%08x", "instance-{id:08x}"),
    ("aio-8774-%08x", "aio-8774-{id:08x}"),
    ("vm-%(uuid)s", "vm-{uuid}"),
], ids=["nova-default", "per-port", "by-uuid"])
def test_instance_name_follows_the_template(api, template, expected):
    """Regression: two deployments sharing one libvirt daemon collided on instance-00000001.

    The domain name comes from ``[DEFAULT] instance_name_template``, as in Nova, so
    each deployment can name its domains apart; an admin sees it in the API.
    """
    client, deps = api
    deps.conf.set_override("instance_name_template", template)
    resp = _post(client, {"name": "named", "flavorRef": "101", "imageRef": world.IMAGE},
                 version="2.1")
    assert resp.status_code == 202, resp.json
    uuid = resp.json["server"]["id"]
    row = instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(), uuid)
    shown = _get(client, f"/v2.1/servers/{uuid}", "2.1", headers=ADMIN).json["server"]
    assert shown["OS-EXT-SRV-ATTR:instance_name"] == expected.format(id=row.id, uuid=uuid)


class _BrokenConductor(world.RecordingConductor):
    def build_instances(self, ctxt, *, instance_uuids, request_spec):
        raise RuntimeError("bus down")


def test_failed_boot_leaks_no_attachment_and_no_instance(api):
    client, deps = api
    deps._given["conductor"] = _BrokenConductor()
    resp = _post(client, {"name": "bfv", "flavorRef": "101", "networks": "none",
                          "block_device_mapping_v2": [{
                              "source_type": "volume", "uuid": world.VOL_BOOT,
                              "destination_type": "volume", "boot_index": 0}]})
    assert resp.status_code == 500
    assert deps.cinder.attachments == {}
    assert deps.cinder.volumes[world.VOL_BOOT]["status"] == "available"
    assert instance_obj.list_instances(deps.db, vs_context.get_admin_context()) == []


def test_in_use_volume_is_refused_by_cinder(api):
    client, deps = api
    deps.cinder.set_status(world.VOL_BOOT, "in-use")
    resp = _post(client, {"name": "bfv", "flavorRef": "101", "networks": "none",
                          "block_device_mapping_v2": [{
                              "source_type": "volume", "uuid": world.VOL_BOOT,
                              "destination_type": "volume", "boot_index": 0}]})
    assert resp.status_code == 400
    assert deps.conductor.casts == []


# --- exact key sets ------------------------------------------------------------------

BASE = {"id", "name", "status", "tenant_id", "user_id", "metadata", "hostId", "image",
        "flavor", "created", "updated", "addresses", "accessIPv4", "accessIPv6", "links",
        "OS-DCF:diskConfig", "OS-EXT-AZ:availability_zone", "config_drive", "key_name",
        "OS-SRV-USG:launched_at", "OS-SRV-USG:terminated_at", "OS-EXT-STS:task_state",
        "OS-EXT-STS:vm_state", "OS-EXT-STS:power_state",
        "os-extended-volumes:volumes_attached", "progress"}
ADMIN_2_1 = {"OS-EXT-SRV-ATTR:host", "OS-EXT-SRV-ATTR:instance_name",
             "OS-EXT-SRV-ATTR:hypervisor_hostname"}
ADMIN_2_3 = {"OS-EXT-SRV-ATTR:reservation_id", "OS-EXT-SRV-ATTR:launch_index",
             "OS-EXT-SRV-ATTR:hostname", "OS-EXT-SRV-ATTR:kernel_id",
             "OS-EXT-SRV-ATTR:ramdisk_id", "OS-EXT-SRV-ATTR:root_device_name",
             "OS-EXT-SRV-ATTR:user_data"}
V2_3_TO_2_47 = {"locked", "description", "tags"}
V2_73 = V2_3_TO_2_47 | {"trusted_image_certificates", "locked_reason"}
V2_96 = V2_73 | {"OS-EXT-SRV-ATTR:hostname", "pinned_availability_zone"}
V2_100 = V2_96 | {"scheduler_hints"}

CASES = [
    ("2.1", set(), ADMIN_2_1, set()),
    ("2.3", set(), ADMIN_2_1 | ADMIN_2_3, set()),
    ("2.47", V2_3_TO_2_47, ADMIN_2_1 | ADMIN_2_3 | {"host_status"}, set()),
    ("2.73", V2_73, ADMIN_2_1 | ADMIN_2_3 | {"host_status"}, {"server_groups"}),
    ("2.96", V2_96, ADMIN_2_1 | ADMIN_2_3 | {"host_status"}, {"server_groups"}),
    ("2.100", V2_100, ADMIN_2_1 | ADMIN_2_3 | {"host_status"}, {"server_groups"}),
]


@pytest.mark.parametrize(("version", "added", "admin_only", "show_only"), CASES)
def test_exact_keys(api, version, added, admin_only, show_only):
    client, deps = api
    resp = _post(client, {"name": "k", "flavorRef": "101", "networks": "none",
                          "imageRef": world.IMAGE,
                          "block_device_mapping_v2": [{
                              "source_type": "volume", "uuid": world.VOL_DATA,
                              "destination_type": "volume", "boot_index": 1}]})
    uuid = resp.json["server"]["id"]
    user = _get(client, f"/v2.1/servers/{uuid}", version).json["server"]
    assert set(user) == BASE | added | show_only
    admin = _get(client, f"/v2.1/servers/{uuid}", version, ADMIN).json["server"]
    assert set(admin) == BASE | added | admin_only | show_only
    detail = _get(client, "/v2.1/servers/detail", version).json["servers"][0]
    assert set(detail) == BASE | added
    volumes = user["os-extended-volumes:volumes_attached"]
    expected = {"id": world.VOL_DATA}
    if version != "2.1":
        expected["delete_on_termination"] = False
    assert volumes == [expected]
    if version in ("2.1", "2.3"):
        assert set(user["flavor"]) == {"id", "links"}
    else:
        assert user["flavor"] == {"vcpus": 1, "ram": 512, "disk": 1, "ephemeral": 0,
                                  "swap": 0, "original_name": "test.small",
                                  "extra_specs": {"hw:cpu_policy": "shared"}}
        assert admin["host_status"] == ""
    assert user["image"]["id"] == world.IMAGE


def test_fault_shows_only_in_error(api):
    from volumesvc.objects import instance_fault

    client, deps = api
    uuid = _post(client, {"name": "f", "flavorRef": "101", "networks": "none",
                          "imageRef": world.IMAGE}).json["server"]["id"]
    ctx = vs_context.get_admin_context()
    instance_fault.create(deps.db, ctx, instance_uuid=uuid, code=500, message="boom",
                          details="Traceback ...")
    assert "fault" not in _get(client, f"/v2.1/servers/{uuid}", "2.1").json["server"]
    instance_obj.save(deps.db, ctx, uuid, {"vm_state": "error", "task_state": None})
    user = _get(client, f"/v2.1/servers/{uuid}", "2.1").json["server"]
    assert user["status"] == "ERROR" and "progress" not in user
    assert set(user["fault"]) == {"code", "created", "message"}
    admin = _get(client, f"/v2.1/servers/{uuid}", "2.1", ADMIN).json["server"]
    assert admin["fault"]["details"] == "Traceback ..."


def test_locked_server_delete(api):
    client, deps = api
    uuid = _post(client, {"name": "l", "flavorRef": "101", "networks": "none",
                          "imageRef": world.IMAGE}).json["server"]["id"]
    ctx = vs_context.get_admin_context()
    instance_obj.save(deps.db, ctx, uuid, {"locked": True, "locked_by": "owner"})
    resp = client.delete(f"/v2.1/servers/{uuid}", headers=ALICE)
    assert resp.status_code == 409
    assert resp.json["conflictingRequest"]["message"] == f"Instance {uuid} is locked"
    assert [c[0] for c in deps.conductor.casts] == ["build_instances"]
    resp = client.delete(f"/v2.1/servers/{uuid}", headers=ADMIN)
    assert resp.status_code == 204
    assert deps.conductor.casts[-1] == ("delete_instance", {"instance_uuid": uuid})
    actions = instance_action.list_actions(deps.db, ctx, uuid)
    assert [a.action for a in actions] == ["delete", "create"]


def test_a_body_above_max_request_body_size_is_a_413_fault(api):
    """Regression: any body size was read and parsed whole (memory per request)."""
    client, deps = api
    limit = deps.conf.oslo_middleware.max_request_body_size
    resp = client.post("/v2.1/servers", data=b'{"server": {"name": "' + b"x" * limit + b'"}}',
                       headers={**ALICE, "Content-Type": "application/json"})
    assert resp.status_code == 413
    assert resp.headers["OpenStack-Error-Code"] == "volumesvc.request.too_large"
    assert resp.json == {"overLimit": {"code": 413, "message": (
        "Request is too large: the body may have at most [oslo_middleware] "
        "max_request_body_size bytes.")}}


@pytest.mark.parametrize("moved_to, status", [("block_device_mapping", 204),
                                              ("spawning", 204), (None, 204),
                                              ("rebooting", 409)])
def test_delete_follows_a_build_that_moved_on_since_it_was_read(api, monkeypatch, moved_to,
                                                                status):
    """Regression (tempest delete-while-building): the build's own next step is no conflict.

    The DELETE read ``scheduling``; before its compare-and-swap the build
    moved on. A build step (or the build's end) must not turn the DELETE into
    a 409; another task in flight still does.
    """
    import dataclasses

    from volumesvc.api.handlers import servers as handler

    client, deps = api
    uuid = _post(client, {"name": "b", "flavorRef": "101", "networks": "none",
                          "imageRef": world.IMAGE}).json["server"]["id"]
    ctx = vs_context.get_admin_context()
    instance_obj.save(deps.db, ctx, uuid, {"task_state": "scheduling"})
    real_get = handler.get_instance
    reads = []

    def stale_first_read(req, server_id, *args, **kwargs):
        instance = real_get(req, server_id, *args, **kwargs)
        reads.append(instance.task_state)
        if len(reads) == 1:
            # What the handler saw; the row moves on before its update.
            instance_obj.save(deps.db, ctx, uuid, {"task_state": moved_to})
            return dataclasses.replace(instance, task_state="scheduling")
        return instance

    monkeypatch.setattr(handler, "get_instance", stale_first_read)
    resp = client.delete(f"/v2.1/servers/{uuid}", headers=ALICE)
    assert resp.status_code == status, resp.json
    final = instance_obj.get_by_uuid(deps.db, ctx, uuid).task_state
    assert final == ("deleting" if status == 204 else moved_to)


def test_typed_boots_reuse_cinders_type_list_and_see_a_new_type_at_once(api, monkeypatch):
    """Issue 15: a boot storm asked cinder-api for every type on every POST.

    Within ``[cinder] volume_type_cache_seconds`` the worker reuses the list;
    a type missing from it is looked up again, so one created a moment ago
    is accepted, and an unknown one is still a 400.
    """
    client, deps = api
    reads = []
    real = deps.cinder.get_volume_types
    monkeypatch.setattr(deps.cinder, "get_volume_types",
                        lambda ctx: reads.append(1) or real(ctx))

    def boot(vtype):
        return _post(client, {"name": "typed", "flavorRef": "101", "networks": "none",
                              "block_device_mapping_v2": [
                                  {"source_type": "blank", "destination_type": "volume",
                                   "boot_index": 0, "volume_size": 1,
                                   "volume_type": vtype}]})

    for _ in range(3):
        assert boot("fast").status_code == 202
    assert len(reads) == 1
    deps.cinder.create_volume_type("brand-new")
    resp = boot("brand-new")
    assert resp.status_code == 202, resp.json
    assert len(reads) == 2
    assert boot("no-such-type").status_code == 400
