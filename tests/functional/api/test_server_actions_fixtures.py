"""Fixtures for the server action, flavor and instance-action journeys.

Re-exported by ``fixtures.py`` (gabbi looks fixture names up there). The
world: servers of project ``demo-project`` (token ``demo:demo-project``) in
the states the §2 gates care about, a volume-backed server with a swap disk
and two volumes of type ``fast``/``slow``, a server with more volumes than
the snapshot quota allows, a deleted server, and recorded instance actions
with events. FakeCinder, FakeGlance and a conductor double that records
casts are injected through Deps. No test functions live here.
"""

import datetime
import json

from tests.fixtures.cinder import FakeCinder
from tests.fixtures.glance import FakeGlance
from volumesvc import context as vs_context
from volumesvc.api.app import create_app
from volumesvc.api.deps import Deps
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj

PROJECT = "demo-project"
OTHER_PROJECT = "other-project"
HOST = "compute-up"
LAUNCHED = datetime.datetime(2026, 1, 1, 12, 0, 0)


def server_uuid(n: int) -> str:
    return f"5e4e0000-0000-4000-8000-{n:012x}"


# Named servers the YAML files use (vm_state, task_state, extra values).
SERVERS = {
    "ACTIVE": (1, "active", None, {}),
    "STOPPED": (2, "stopped", None, {}),
    "PAUSED": (3, "paused", None, {}),
    "SUSPENDED": (4, "suspended", None, {}),
    "ERROR": (5, "error", None, {}),
    "BUILDING": (6, "building", "spawning", {"launched_at": None}),
    "RESCUED": (7, "rescued", None, {}),
    "SHELVED": (8, "shelved", None, {}),
    "REBOOTING": (9, "active", "rebooting", {}),
    "REBOOTING_HARD": (10, "active", "rebooting_hard", {}),
    "DELETING": (11, "active", "deleting", {}),
    "LOCKED": (12, "active", None, {"locked": True, "locked_by": "owner"}),
    "NOT_LAUNCHED": (13, "active", None, {"launched_at": None}),
    "IMAGE_BACKED": (14, "active", None, {"image_ref": "1a6e0000-0000-4000-8000-000000000001"}),
    "OVER_QUOTA": (15, "active", None, {}),
    "OTHER_PROJECT": (16, "active", None, {"project_id": OTHER_PROJECT}),
    "PAUSING": (17, "paused", "pausing", {}),
    "SNAPSHOTTING": (18, "active", "image_snapshot", {}),
    "RESIZED": (19, "resized", None, {}),
    "DELETED": (20, "active", None, {}),
    "ACTIONS": (21, "active", None, {}),
    "LOCKED_STOPPED": (22, "stopped", None, {"locked": True}),
}
SNAPSHOT_QUOTA = 10
VOL_ROOT = "0b0e0000-0000-4000-8000-000000000001"
VOL_DATA = "0b0e0000-0000-4000-8000-000000000002"
# Action request ids seeded on the ACTIONS server (oldest first).
ACTION_REQUESTS = [f"req-5eed0000-0000-4000-8000-{n:012x}" for n in range(1, 6)]


class RecordingConductor:
    """Conductor double: records every cast as (method, kwargs)."""

    def __init__(self):
        self.casts = []

    def reboot_instance(self, ctxt, *, instance_uuid, reboot_type):
        self.casts.append(("reboot_instance", {"instance_uuid": instance_uuid,
                                               "reboot_type": reboot_type}))


def make_cinder() -> FakeCinder:
    cinder = FakeCinder()
    ctx = vs_context.get_admin_context()
    cinder.create_volume_type("fast")
    cinder.create_volume_type("slow")
    for volume_id, vtype in ((VOL_ROOT, "fast"), (VOL_DATA, "slow")):
        cinder.create(ctx, 2, volume_id, "desc", volume_type=vtype, volume_id=volume_id)
    for n in range(SNAPSHOT_QUOTA + 1):
        volume_id = f"0b0e0000-0000-4000-8000-0000000001{n:02x}"
        cinder.create(ctx, 1, volume_id, None, volume_id=volume_id)
    cinder.calls.clear()
    return cinder


def _volume_bdm(instance_uuid, volume_id, boot_index, device, vtype=None):
    return {"instance_uuid": instance_uuid, "source_type": "volume",
            "destination_type": "volume", "volume_id": volume_id, "boot_index": boot_index,
            "device_name": device, "disk_bus": "virtio", "device_type": "disk",
            "volume_size": 2, "delete_on_termination": boot_index == 0,
            "volume_type": vtype}


def _seed_servers(db, ctx):
    for name, (n, vm_state, task_state, extra) in SERVERS.items():
        values = {"uuid": server_uuid(n), "project_id": PROJECT, "user_id": "demo",
                  "display_name": name.lower(), "vm_state": vm_state,
                  "task_state": task_state, "power_state": 1, "host": HOST, "node": HOST,
                  "launched_at": LAUNCHED, "root_device_name": "/dev/vda", "image_ref": ""}
        values.update(extra)
        instance_obj.create(db, ctx, values)
    active = server_uuid(SERVERS["ACTIVE"][0])
    # NOTE: volumes are stored before the swap disk on purpose: the image
    # mapping must still list local disks first.
    bdm_obj.create(db, ctx, _volume_bdm(active, VOL_ROOT, 0, "/dev/vda"))
    bdm_obj.create(db, ctx, _volume_bdm(active, VOL_DATA, None, "/dev/vdb"))
    bdm_obj.create(db, ctx, {"instance_uuid": active, "source_type": "blank",
                             "destination_type": "local", "guest_format": "swap",
                             "boot_index": -1, "device_name": "/dev/vdc", "volume_size": 1,
                             "delete_on_termination": True})
    for name in SERVERS:
        if name in ("ACTIVE", "IMAGE_BACKED"):
            continue
        uuid = server_uuid(SERVERS[name][0])
        if name == "OVER_QUOTA":
            for n in range(SNAPSHOT_QUOTA + 1):
                bdm_obj.create(db, ctx, _volume_bdm(
                    uuid, f"0b0e0000-0000-4000-8000-0000000001{n:02x}", 0 if n == 0 else None,
                    f"/dev/vd{chr(ord('a') + n)}"))
        else:
            bdm_obj.create(db, ctx, _volume_bdm(uuid, VOL_ROOT, 0, "/dev/vda"))
    instance_obj.destroy(db, ctx, server_uuid(SERVERS["DELETED"][0]))


def _seed_actions(db, ctx):
    uuid = server_uuid(SERVERS["ACTIONS"][0])
    names = ["create", "reboot", "createImage", "attach_volume", "detach_volume"]
    for request_id, name in zip(ACTION_REQUESTS, names, strict=True):
        action_obj.action_start(db, ctx, uuid, name, request_id, "demo", PROJECT)
    first = ACTION_REQUESTS[0]
    action_obj.event_start(db, ctx, uuid, first, "compute_build_and_run_instance", host=HOST)
    action_obj.event_finish(db, ctx, uuid, first, "compute_build_and_run_instance",
                            result="Success", details="built")
    action_obj.event_start(db, ctx, uuid, first, "compute_attach_volume", host=HOST)
    action_obj.event_finish(db, ctx, uuid, first, "compute_attach_volume", result="Error",
                            traceback="Traceback (most recent call last): boom",
                            details="device busy")
    deleted = server_uuid(SERVERS["DELETED"][0])
    action_obj.action_start(db, ctx, deleted, "delete", "req-de1e7ed0", "demo", PROJECT)


def seed(db, ctx):
    _seed_servers(db, ctx)
    _seed_actions(db, ctx)


def build_app(conf, db):
    """(app, deps) with the fakes above; used by gabbi and the pytest tests."""
    conf.set_override("endpoint_override", "http://glance.example.test:9292", group="glance")
    deps = Deps(conf, db=db, cinder=make_cinder(), glance=FakeGlance(),
                conductor=RecordingConductor())
    return create_app(conf, deps=deps), deps


def actions_fixture_class(base):
    """A gabbi fixture on ``base`` (fixtures.APIFixture) with this world."""

    class _Fixture(base):
        def seed(self, db, ctx):
            seed(db, ctx)

        def start_fixture(self):
            super().start_fixture()
            app, self.deps = build_app(self.conf, self.db)
            from tests.functional.api import fixtures

            fixtures._CURRENT["app"] = app

    return _Fixture


def image_mapping(image) -> list:
    """The decoded ``block_device_mapping`` property of an image (for assertions)."""
    return json.loads(image["properties"]["block_device_mapping"])
