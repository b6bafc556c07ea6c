"""Helpers shared by the HTTP tests on the server-actions world (``fixtures.ServerActionsWorld``).

Shared here rather than imported from one test module by another, so that a
test module holds tests only.
"""

from tests.functional.api.fixtures import ServerActionsWorld as world
from volumesvc import context as vs_context
from volumesvc.objects import instance as instance_obj

DEMO = {"X-Auth-Token": "demo:demo-project"}
ADMIN = {"X-Auth-Token": "admin:admin-project"}
VM_STATES = ["active", "building", "paused", "suspended", "stopped", "rescued", "resized",
             "soft-delete", "error", "shelved", "shelved_offloaded"]
TASK_STATES = [None, "rebooting", "reboot_pending", "reboot_started", "rebooting_hard",
               "reboot_pending_hard", "reboot_started_hard", "resuming", "pausing",
               "unpausing", "suspending", "deleting", "image_snapshot", "spawning",
               "powering-off"]
FLAVOR = {"flavorid": "1", "name": "m1.tiny", "memory_mb": 512, "vcpus": 1, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


def server_uuid(name):
    """The uuid of the world's server ``name`` (``ACTIVE``, ``SHUTOFF``, ...)."""
    return world.server_uuid(world.SERVERS[name][0])


def post_action(client, name_or_uuid, body, headers=DEMO, version="2.1"):
    uuid = server_uuid(name_or_uuid) if name_or_uuid in world.SERVERS else name_or_uuid
    return client.post(f"/v2.1/servers/{uuid}/action", json=body,
                       headers=dict(headers, **{"OpenStack-API-Version": f"compute {version}",
                                                "X-OpenStack-Nova-API-Version": version}))


def set_state(deps, name, vm_state, task_state):
    ctx = vs_context.get_admin_context()
    instance_obj.save(deps.db, ctx, server_uuid(name), {"vm_state": vm_state,
                                                        "task_state": task_state})


def race_task_state(monkeypatch, task_state="deleting"):
    """Another request sets ``task_state`` just before each instance save."""
    real_save = instance_obj.save

    def racing_save(db, ctx, uuid, values, expected_task_state=instance_obj.UNSET):
        real_save(db, ctx, uuid, {"task_state": task_state})
        return real_save(db, ctx, uuid, values, expected_task_state=expected_task_state)

    monkeypatch.setattr(instance_obj, "save", racing_save)


def with_flavors(deps):
    """The world's servers with the flavor every booted server has (shown in bodies)."""
    ctx = vs_context.get_admin_context()
    for instance in instance_obj.list_instances(deps.db, ctx):
        instance_obj.save(deps.db, ctx, instance.uuid, {"flavor": dict(FLAVOR)})


def boot_body(name, **keys):
    """A POST /servers body: a blank 1 GiB root volume, no network, plus ``keys``."""
    return {"server": {"name": name, "flavorRef": "1", "networks": "none", **keys,
                       "block_device_mapping_v2": [{
                           "source_type": "blank", "destination_type": "volume",
                           "boot_index": 0, "volume_size": 1}]}}


def call(client, method, path, body=None, *, version="2.1", headers=DEMO):
    kwargs = {"json": body} if body is not None else {}
    resp = client.open(f"/v2.1{path}", method=method, headers=dict(
        headers, **{"OpenStack-API-Version": f"compute {version}"}), **kwargs)
    return resp.status_code, resp.get_json(silent=True), resp


def server_path(name="ACTIVE"):
    return f"/servers/{server_uuid(name)}"


def instance_of(deps, name="ACTIVE"):
    return instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(), server_uuid(name))
