"""Fixtures for the volume attachment journeys (gabbits/volume-attachments-*.yaml).

Re-exported by ``fixtures.py`` (gabbi looks fixture names up there). The
world: servers of project ``PROJECT`` (token ``alice:<PROJECT>``) in the
states the §2 attach/detach/swap gates care about, on an up compute and on
a long-silent one; a FakeCinder with available, in-use, multiattach and
migrating volumes whose Cinder attachments match the BDM rows; and
:class:`AttachConductor`, a conductor double that on an attach *call*
reserves a device and creates the BDM and Cinder attachment the way the real
conductor does, and on a cast only records. Fixed ids are what the YAML
files use. No test functions live here.
"""

import datetime

from tests.fixtures.cinder import FakeCinder
from volumesvc import context as vs_context
from volumesvc import exception, rpc
from volumesvc.api.app import create_app
from volumesvc.api.deps import Deps
from volumesvc.conductor import rpcapi as conductor_rpcapi
from volumesvc.db import models
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import service as service_obj

PROJECT = "7e57000000000000000000000000a11c"
OTHER_PROJECT = "07e4000000000000000000000000b0b0"
HOST = "compute-up"
HOST_DOWN = "compute-down"
LAUNCHED = datetime.datetime(2026, 1, 1, 12, 0, 0)


def server_uuid(n: int) -> str:
    return f"a77a0000-0000-4000-8000-{n:012x}"


def volume_uuid(n: int) -> str:
    return f"b01e0000-0000-4000-8000-{n:012x}"


# name -> (n, vm_state, task_state, extra instance values)
SERVERS = {
    "ACTIVE": (1, "active", None, {}),
    "STOPPED": (2, "stopped", None, {}),
    "PAUSED": (3, "paused", None, {}),
    "SHELVED": (4, "shelved", None, {}),
    "SHELVED_OFFLOADED": (5, "shelved_offloaded", None, {"host": None, "node": None}),
    "LOCKED": (6, "active", None, {"locked": True, "locked_by": "owner"}),
    "BUILDING": (7, "building", "spawning", {"launched_at": None}),
    "REBOOTING": (8, "active", "rebooting", {}),
    "ERROR": (9, "error", None, {}),
    "SUSPENDED": (10, "suspended", None, {}),
    "OTHER_PROJECT": (11, "active", None, {"project_id": OTHER_PROJECT}),
    "HOST_DOWN": (12, "active", None, {"host": HOST_DOWN, "node": HOST_DOWN}),
    "NOT_LAUNCHED": (13, "active", None, {"launched_at": None}),
    "SECOND": (14, "active", None, {}),
}
SERVER = {name: server_uuid(n) for name, (n, *_rest) in SERVERS.items()}

# Volumes: (n, multiattach, attached to [(server name, device, tag, boot_index, dot,
# legacy: no attachment_id in the BDM)], extra volume values)
VOLUMES = {
    "ROOT": (1, False, [("ACTIVE", "/dev/vda", None, 0, True, False)], {}),
    "DATA": (2, False, [("ACTIVE", "/dev/vdb", "data", None, False, False)], {}),
    "LEGACY": (3, False, [("ACTIVE", "/dev/vdc", None, None, True, True)], {}),
    "MIGRATING": (4, False, [("ACTIVE", "/dev/vdd", None, None, False, False)],
                  {"migration_status": "migrating"}),
    "SHARED": (5, True, [("ACTIVE", "/dev/vde", None, None, False, False),
                         ("SECOND", "/dev/vdb", None, None, False, False)],
               {"migration_status": "migrating"}),
    "FREE": (6, False, [], {}),
    "FREE2": (7, False, [], {}),
    "MULTI": (8, True, [], {}),
    "STOPPED_DATA": (9, False, [("STOPPED", "/dev/vdb", None, None, False, False)], {}),
    "SHELVED_DATA": (10, False, [("SHELVED", "/dev/vdb", None, None, False, False)], {}),
    "LOCKED_DATA": (11, False, [("LOCKED", "/dev/vdb", None, None, False, False)], {}),
    "DOWN_DATA": (12, False, [("HOST_DOWN", "/dev/vdb", None, None, False, False)], {}),
    "REBOOTING_DATA": (13, False, [("REBOOTING", "/dev/vdb", None, None, False, False)], {}),
    "DETACHING": (14, False, [("SECOND", "/dev/vdc", None, None, False, False)],
                  {"status": "detaching"}),
    # The attach call fails in the conductor/compute with these (below 2.101).
    "TOO_MANY": (20, False, [], {}),
    "DEVICE_BUSY": (21, False, [], {}),
    "NO_TAGS": (22, False, [], {}),
}
VOLUME = {name: volume_uuid(n) for name, (n, *_rest) in VOLUMES.items()}
VOLUME["UNKNOWN"] = volume_uuid(0xff)

# What the conductor double raises for an attach call of these volumes.
CONDUCTOR_FAILURES = {
    VOLUME["TOO_MANY"]: lambda: exception.TooManyDiskDevices(maximum=2),
    VOLUME["DEVICE_BUSY"]: lambda: exception.DevicePathInUse(path="/dev/vdz"),
    VOLUME["NO_TAGS"]: lambda: exception.TaggedAttachmentNotSupported(),
}


class AttachConductor:
    """Conductor double for the attachment API.

    ``can_attach`` asks a real rpcapi client built from ``conf`` (so
    ``[upgrade_levels] conductor`` decides it, as in production). An
    attach *call* picks the next free ``/dev/vdX`` under the instance, creates
    a reserved Cinder attachment and the BDM, and returns the BDM dict; a
    *cast* only records. The Cinder attachment is completed at once, as the
    compute attach the real conductor casts would do. ``calls`` holds
    (method, kwargs) of everything.
    """

    def __init__(self, conf, db, cinder):
        self._rpcapi = conductor_rpcapi.ConductorAPI(conf, rpc.get_transport(conf))
        self.db, self.cinder = db, cinder
        self.calls = []

    def can_attach(self):
        return self._rpcapi.can_attach()

    def attach_volume(self, ctxt, *, instance_uuid, volume_id, device=None, disk_bus=None,
                      device_type=None, tag=None, delete_on_termination=False,
                      multiattach=None, wait=False):
        self.calls.append(("attach_volume", dict(
            instance_uuid=instance_uuid, volume_id=volume_id, device=device,
            disk_bus=disk_bus, device_type=device_type, tag=tag,
            delete_on_termination=delete_on_termination, multiattach=multiattach,
            wait=wait)))
        if not wait:
            return None
        if volume_id in CONDUCTOR_FAILURES:
            raise CONDUCTOR_FAILURES[volume_id]()
        ctx = vs_context.get_admin_context()
        used = {b.device_name for b in bdm_obj.list_by_instance(self.db, ctx, instance_uuid)}
        name = next(f"/dev/vd{c}" for c in "bcdefghijklmnopqrstuvwxyz"
                    if f"/dev/vd{c}" not in used)
        attachment = self.cinder.attachment_create(ctx, volume_id, instance_uuid)
        # What the compute's attach (cast by the real conductor) ends with.
        self.cinder.attachment_update(ctx, attachment["id"], {"host": HOST}, name)
        self.cinder.attachment_complete(ctx, attachment["id"])
        bdm = bdm_obj.create(self.db, ctx, {
            "instance_uuid": instance_uuid, "source_type": "volume",
            "destination_type": "volume", "volume_id": volume_id, "device_name": name,
            "tag": tag, "delete_on_termination": delete_on_termination,
            "attachment_id": attachment["id"], "disk_bus": disk_bus or "virtio",
            "device_type": device_type or "disk"})
        return bdm.to_dict()

    def detach_volume(self, ctxt, *, instance_uuid, volume_id, attachment_id):
        self.calls.append(("detach_volume", dict(instance_uuid=instance_uuid,
                                                 volume_id=volume_id,
                                                 attachment_id=attachment_id)))


def make_cinder() -> FakeCinder:
    cinder = FakeCinder()
    cinder.create_volume_type("shared", {"multiattach": "<is> True"})
    ctx = vs_context.get_admin_context()
    for name, (_n, multi, attached, extra) in VOLUMES.items():
        cinder.create(ctx, 1, name.lower(), None, volume_type="shared" if multi else None,
                      volume_id=VOLUME[name])
        for server, device, *_rest in attached:
            attachment = cinder.attachment_create(
                ctx, VOLUME[name], SERVER[server],
                connector={"host": HOST, "mountpoint": device}, mountpoint=device)
            cinder.attachment_complete(ctx, attachment["id"])
        cinder.volumes[VOLUME[name]].update(extra)
    cinder.calls.clear()
    return cinder


def _seed_servers(db, ctx):
    for name, (n, vm_state, task_state, extra) in SERVERS.items():
        values = {"uuid": server_uuid(n), "project_id": PROJECT, "user_id": "alice",
                  "display_name": name.lower(), "vm_state": vm_state,
                  "task_state": task_state, "power_state": 1, "host": HOST, "node": HOST,
                  "launched_at": LAUNCHED, "root_device_name": "/dev/vda", "image_ref": ""}
        values.update(extra)
        instance_obj.create(db, ctx, values)
    # A local disk: never listed as an attachment.
    bdm_obj.create(db, ctx, {"instance_uuid": SERVER["ACTIVE"], "source_type": "blank",
                             "destination_type": "local", "guest_format": "swap",
                             "boot_index": -1, "device_name": "/dev/vdz", "volume_size": 1,
                             "delete_on_termination": True})


def _seed_bdms(db, ctx, cinder):
    for name, (_n, _multi, attached, _extra) in VOLUMES.items():
        volume_id = VOLUME[name]
        entries = {e["server_id"]: e["attachment_id"]
                   for e in cinder.volumes[volume_id]["attachments"]}
        for server, device, tag, boot_index, dot, legacy in attached:
            bdm_obj.create(db, ctx, {
                "instance_uuid": SERVER[server], "source_type": "volume",
                "destination_type": "volume", "volume_id": volume_id,
                "boot_index": boot_index, "device_name": device, "tag": tag,
                "delete_on_termination": dot, "disk_bus": "virtio", "device_type": "disk",
                "attachment_id": None if legacy else entries[SERVER[server]]})


def _seed_services(db, ctx):
    for host in (HOST, HOST_DOWN):
        service_obj.heartbeat(db, ctx, host=host, binary="volumesvc-compute",
                              topic="compute", version=1, capabilities={})
    old = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - \
        datetime.timedelta(hours=1)
    down = service_obj.get_by_host_and_binary(db, ctx, HOST_DOWN, "volumesvc-compute")
    with db.writer(ctx) as session:
        row = session.get(models.Service, down.id)
        row.last_seen_up = row.updated_at = row.created_at = old


def seed(db, ctx):
    _seed_services(db, ctx)
    _seed_servers(db, ctx)


def build_app(conf, db, *, conductor_cap=None):
    """(app, deps) with the fakes above; used by gabbi and the pytest tests."""
    conf.set_override("transport_url", "fake:/")
    if conductor_cap:
        conf.set_override("conductor", conductor_cap, group="upgrade_levels")
    cinder = make_cinder()
    _seed_bdms(db, vs_context.get_admin_context(), cinder)
    deps = Deps(conf, db=db, cinder=cinder, conductor=AttachConductor(conf, db, cinder))
    return create_app(conf, deps=deps), deps


def attachments_fixture_class(base, conductor_cap=None):
    """A gabbi fixture on ``base`` (fixtures.APIFixture) with this world."""

    class _Fixture(base):
        def seed(self, db, ctx):
            seed(db, ctx)

        def start_fixture(self):
            super().start_fixture()
            app, self.deps = build_app(self.conf, self.db, conductor_cap=conductor_cap)
            from tests.functional.api import fixtures

            fixtures._CURRENT["app"] = app

    return _Fixture
