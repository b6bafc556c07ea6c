"""The API tests' worlds, in one module.

A *world* is what a group of API tests starts from: rows seeded in a fresh,
migrated SQLite database, plus the Cinder, Glance and conductor doubles
injected through ``Deps``. Its fixed ids are the ids the tests use. A test
opens one with :func:`open_world` and calls the app through Flask's test
client; each world gets a fresh ConfigOpts (noauth2, response validation
on) and a fresh database.
"""

import contextlib
import datetime
import json
import pathlib
import tempfile
import time

import sqlalchemy as sa

from tests.fixtures import database as db_fixtures
from tests.fixtures.cinder import FakeCinder
from tests.fixtures.glance import FakeGlance
from tests.functional.stack import Stack
from volumesvc import context as vs_context
from volumesvc import exception, version
from volumesvc.api.deps import Deps
from volumesvc.conf import get_conf
from volumesvc.db import models
from volumesvc.objects import attachment_status
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import service as service_obj
from volumesvc.serving.app import create_app

COMPUTE_UP_HOST = "compute-up"
COMPUTE_DOWN_HOST = "compute-down"
LAUNCHED = datetime.datetime(2026, 1, 1, 12, 0, 0)


def _conf():
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("response_validation", "error", group="api")
    return conf


def _compute_services(db, ctx, *, up=(COMPUTE_UP_HOST,), down=(), compute_version=1):
    """Compute services on ``up`` and ``down`` hosts; the down ones silent for an hour."""
    for host in (*up, *down):
        service_obj.heartbeat(db, ctx, host=host, binary="volumesvc-compute",
                              topic="compute", version=compute_version, capabilities={})
    old = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - \
        datetime.timedelta(hours=1)
    for host in down:
        service = service_obj.get_by_host_and_binary(db, ctx, host, "volumesvc-compute")
        with db.writer(ctx) as session:
            row = session.get(models.Service, service.id)
            row.last_seen_up = row.updated_at = row.created_at = old


def _servers(db, ctx, servers, server_uuid, *, project, user):
    """Instances from a ``{name: (n, vm_state, task_state, extra values)}`` table."""
    for name, (n, vm_state, task_state, extra) in servers.items():
        values = {"uuid": server_uuid(n), "project_id": project, "user_id": user,
                  "display_name": name.lower(), "vm_state": vm_state,
                  "task_state": task_state, "power_state": 1, "host": COMPUTE_UP_HOST,
                  "node": COMPUTE_UP_HOST, "launched_at": LAUNCHED,
                  "root_device_name": "/dev/vda", "image_ref": ""}
        values.update(extra)
        instance_obj.create(db, ctx, values)


class RecordingConductor:
    """Conductor double: records every cast as (method, kwargs)."""

    def __init__(self):
        self.casts = []

    def build_instances(self, ctxt, *, instance_uuids, request_spec):
        # NOTE: what goes on the bus must be JSON; fail here if it is not.
        json.dumps(request_spec)
        self.casts.append(("build_instances", {"instance_uuids": list(instance_uuids),
                                               "request_spec": request_spec}))

    def delete_instance(self, ctxt, *, instance_uuid):
        self.casts.append(("delete_instance", {"instance_uuid": instance_uuid}))

    def reboot_instance(self, ctxt, *, instance_uuid, reboot_type):
        self.casts.append(("reboot_instance", {"instance_uuid": instance_uuid,
                                               "reboot_type": reboot_type}))

    def can_lifecycle(self):
        return True

    def stop_instance(self, ctxt, *, instance_uuid):
        self.casts.append(("stop_instance", {"instance_uuid": instance_uuid}))

    def start_instance(self, ctxt, *, instance_uuid):
        self.casts.append(("start_instance", {"instance_uuid": instance_uuid}))

    def shelve_instance(self, ctxt, *, instance_uuid):
        self.casts.append(("shelve_instance", {"instance_uuid": instance_uuid}))

    def shelve_offload_instance(self, ctxt, *, instance_uuid):
        self.casts.append(("shelve_offload_instance", {"instance_uuid": instance_uuid}))

    def unshelve_instance(self, ctxt, *, instance_uuid, availability_zone=None, host=None):
        self.casts.append(("unshelve_instance", {"instance_uuid": instance_uuid,
                                                 "availability_zone": availability_zone,
                                                 "host": host}))


class World:
    """No rows and no doubles: the plain app."""

    @classmethod
    def seed(cls, db, ctx):
        """Nothing by default; worlds add rows."""

    @classmethod
    def build_app(cls, conf, db):
        """(app, deps) on ``db`` with this world's doubles."""
        deps = Deps(conf, db=db)
        return create_app(conf, deps=deps), deps


@contextlib.contextmanager
def open_world(world, backend="sqlite"):
    """Yield (app, deps) of ``world`` on a fresh config and database.

    ``backend``: SQLite, or a throwaway database on the local PostgreSQL or
    MariaDB server (``"postgresql"``, ``"mysql"``) for what differs there.
    """
    conf = _conf()
    manager = (db_fixtures.fresh_sqlite_database(conf) if backend == "sqlite"
               else db_fixtures.server_database(conf, backend))
    with manager as db:
        world.seed(db, vs_context.get_admin_context())
        yield world.build_app(conf, db)


class ServicesWorld(World):
    """Two computes (one up, one long silent) and a conductor."""

    @classmethod
    def seed(cls, db, ctx):
        _compute_services(db, ctx, down=(COMPUTE_DOWN_HOST,))
        service_obj.heartbeat(db, ctx, host="controller", binary="volumesvc-conductor",
                              topic="conductor", version=1, capabilities={})


class ServersWorld(World):
    """The /servers tests (test_servers*.py).

    One up compute at the current service version, three flavors, a
    FakeCinder with fixed-id volume types, volumes and a snapshot, a
    FakeGlance with a plain image and a volume-backed snapshot image
    (``bdm_v2``), and a conductor double that records casts.
    """

    COMPUTE_VERSION = version.SERVICE_VERSION
    TYPE_FAST = "0b5d3a6e-0000-4000-8000-00000000fa57"
    TYPE_MULTI = "0b5d3a6e-0000-4000-8000-0000000a1111"
    VOL_BOOT = "5a1e0000-0000-4000-8000-000000000001"
    VOL_DATA = "5a1e0000-0000-4000-8000-000000000002"
    VOL_MULTI = "5a1e0000-0000-4000-8000-000000000003"
    VOL_OTHER_AZ = "5a1e0000-0000-4000-8000-000000000004"
    VOL_UNKNOWN = "5a1e0000-0000-4000-8000-0000000000ff"
    SNAPSHOT = "5a1e0000-0000-4000-8000-0000000005a9"
    IMAGE = "1a6e0000-0000-4000-8000-000000000001"
    IMAGE_BFV_SNAPSHOT = "1a6e0000-0000-4000-8000-000000000002"
    IMAGE_QUEUED = "1a6e0000-0000-4000-8000-000000000003"
    IMAGE_MIN_RAM_1G = "1a6e0000-0000-4000-8000-000000000004"
    IMAGE_UNKNOWN = "1a6e0000-0000-4000-8000-0000000000ff"
    RecordingConductor = RecordingConductor

    @classmethod
    def make_cinder(cls) -> FakeCinder:
        cinder = FakeCinder(cross_az_attach=False)
        cinder.create_volume_type("fast", type_id=cls.TYPE_FAST)
        cinder.create_volume_type("shared", {"multiattach": "<is> True"},
                                  type_id=cls.TYPE_MULTI)
        ctx = vs_context.get_admin_context()
        for volume_id, kwargs in (
                (cls.VOL_BOOT, {"image_id": cls.IMAGE}), (cls.VOL_DATA, {}),
                (cls.VOL_MULTI, {"volume_type": "shared", "image_id": cls.IMAGE}),
                (cls.VOL_OTHER_AZ, {"availability_zone": "other"})):
            cinder.create(ctx, 2, volume_id, None, volume_id=volume_id, **kwargs)
        cinder.create_snapshot_force(ctx, cls.VOL_BOOT, snapshot_id=cls.SNAPSHOT)
        cinder.calls.clear()
        return cinder

    @classmethod
    def make_glance(cls) -> FakeGlance:
        glance = FakeGlance()
        ctx = vs_context.get_admin_context()
        mapping = [{"source_type": "snapshot", "destination_type": "volume",
                    "snapshot_id": cls.SNAPSHOT, "boot_index": 0, "device_name": "/dev/vda",
                    "delete_on_termination": True, "volume_size": 3, "volume_type": "fast",
                    "volume_id": None, "image_id": None, "guest_format": None,
                    "no_device": None, "tag": None, "disk_bus": "virtio",
                    "device_type": "disk"}]
        for image_id, kwargs in (
                (cls.IMAGE, {"data": b"qcow2", "min_disk": 1}),
                (cls.IMAGE_BFV_SNAPSHOT, {"properties": {
                    "bdm_v2": True, "root_device_name": "/dev/vda",
                    "block_device_mapping": json.dumps(mapping)}}),
                (cls.IMAGE_QUEUED, {"size": None}),
                (cls.IMAGE_MIN_RAM_1G, {"data": b"raw"})):
            glance.create(ctx, name=image_id, owner="admin-project", image_id=image_id,
                          **kwargs)
        # More memory than the flavors have (512 MiB): boots with it are refused.
        glance.images[cls.IMAGE_MIN_RAM_1G]["min_ram"] = 1024
        glance.calls.clear()
        return glance

    @classmethod
    def seed(cls, db, ctx):
        _compute_services(db, ctx, compute_version=cls.COMPUTE_VERSION)
        for flavorid, name, extra in (
                ("101", "test.small", {}),
                ("102", "test.ephemeral", {"ephemeral_gb": 1, "swap": 512}),
                ("103", "test.disabled", {"disabled": True})):
            flavor_obj.create(db, ctx, {"flavorid": flavorid, "name": name, "memory_mb": 512,
                                        "vcpus": 1, "root_gb": 1,
                                        "extra_specs": {"hw:cpu_policy": "shared"}, **extra})

    @classmethod
    def build_app(cls, conf, db):
        deps = Deps(conf, db=db, cinder=cls.make_cinder(), glance=cls.make_glance(),
                    conductor=RecordingConductor())
        return create_app(conf, deps=deps), deps


def _actions_server_uuid(n: int) -> str:
    return f"5e4e0000-0000-4000-8000-{n:012x}"


# --- The server list filters' world (test_server_list_filters.py, test_server_list_patterns.py)

ALICE_PROJECT = "7e57000000000000000000000000a11c"
ALICE = {"X-Auth-Token": f"alice:{ALICE_PROJECT}"}
ADMIN = {"X-Auth-Token": "admin:admin-project"}
FILTER_T0 = datetime.datetime(2026, 3, 1, 12, 0, 0)
ZONE_HOST = "compute-east"


def filter_server_uuid(n):
    """The uuid of FilterWorld's server number ``n``."""
    return f"f11e0000-0000-4000-8000-{n:012d}"


def add_filter_server(db, ctx, n, deleted=False, flavor="101", **values):
    """A server of Alice's written straight into the database, its times set from ``n``."""
    flavor = flavor_obj.get_by_flavorid(db, ctx, flavor)
    row = {"uuid": filter_server_uuid(n), "project_id": ALICE_PROJECT, "user_id": "alice",
           "display_name": f"web-{n}", "vm_state": "active", "power_state": 1,
           "host": COMPUTE_UP_HOST, "node": COMPUTE_UP_HOST,
           "key_name": "kp-a", "progress": 0,
           "flavor_id": flavor.id, "flavor": flavor.instance_copy()}
    row.update(values)
    instance_obj.create(db, ctx, row)
    with db.writer(ctx) as session:
        model = session.scalars(sa.select(models.Instance)
                                .filter_by(uuid=filter_server_uuid(n))).one()
        model.created_at = FILTER_T0 + datetime.timedelta(hours=n)
        model.updated_at = FILTER_T0 + datetime.timedelta(hours=n, minutes=30)
        if deleted:
            model.deleted, model.deleted_at = model.id, model.updated_at


class FilterWorld(ServersWorld):
    """ServersWorld plus a compute in zone ``east`` and five servers of Alice."""

    @classmethod
    def seed(cls, db, ctx):
        super().seed(db, ctx)
        service_obj.heartbeat(db, ctx, host=ZONE_HOST, binary="volumesvc-compute",
                              topic="compute", version=cls.COMPUTE_VERSION,
                              capabilities={"availability_zone": "east"})
        add_filter_server(db, ctx, 1)
        add_filter_server(db, ctx, 2, key_name="other", power_state=4, vm_state="stopped")
        add_filter_server(db, ctx, 10, host=ZONE_HOST, node=ZONE_HOST, launched_at=FILTER_T0)
        add_filter_server(db, ctx, 11, user_id="bob", locked=True, flavor="102",
                image_ref=ServersWorld.IMAGE)
        add_filter_server(db, ctx, 12, deleted=True)


class ServerActionsWorld(World):
    """Server actions, flavors and instance actions.

    Servers of project ``demo-project`` (token ``demo:demo-project``) in the
    states the §2 gates care about, a volume-backed server with a swap disk
    and two volumes of type ``fast``/``slow``, a server with more volumes than
    the snapshot quota allows, a deleted server, and recorded instance actions
    with events.
    """

    PROJECT = "demo-project"
    OTHER_PROJECT = "other-project"
    server_uuid = staticmethod(_actions_server_uuid)
    # Named servers the tests use (n, vm_state, task_state, extra values).
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
        "IMAGE_BACKED": (14, "active", None,
                         {"image_ref": "1a6e0000-0000-4000-8000-000000000001"}),
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

    @staticmethod
    def _quota_volume(n):
        return f"0b0e0000-0000-4000-8000-0000000001{n:02x}"

    @classmethod
    def make_cinder(cls) -> FakeCinder:
        cinder = FakeCinder()
        ctx = vs_context.get_admin_context()
        cinder.create_volume_type("fast")
        cinder.create_volume_type("slow")
        for volume_id, vtype in ((cls.VOL_ROOT, "fast"), (cls.VOL_DATA, "slow")):
            cinder.create(ctx, 2, volume_id, "desc", volume_type=vtype, volume_id=volume_id)
        for n in range(cls.SNAPSHOT_QUOTA + 1):
            cinder.create(ctx, 1, cls._quota_volume(n), None, volume_id=cls._quota_volume(n))
        cinder.calls.clear()
        return cinder

    @staticmethod
    def _volume_bdm(instance_uuid, volume_id, boot_index, device, vtype=None):
        return {"instance_uuid": instance_uuid, "source_type": "volume",
                "destination_type": "volume", "volume_id": volume_id,
                "boot_index": boot_index, "device_name": device, "disk_bus": "virtio",
                "device_type": "disk", "volume_size": 2,
                "delete_on_termination": boot_index == 0, "volume_type": vtype}

    @classmethod
    def _seed_servers(cls, db, ctx):
        _servers(db, ctx, cls.SERVERS, cls.server_uuid, project=cls.PROJECT, user="demo")
        active = cls.server_uuid(cls.SERVERS["ACTIVE"][0])
        # NOTE: volumes are stored before the swap disk on purpose: the image
        # mapping must still list local disks first.
        bdm_obj.create(db, ctx, cls._volume_bdm(active, cls.VOL_ROOT, 0, "/dev/vda"))
        bdm_obj.create(db, ctx, cls._volume_bdm(active, cls.VOL_DATA, None, "/dev/vdb"))
        bdm_obj.create(db, ctx, {"instance_uuid": active, "source_type": "blank",
                                 "destination_type": "local", "guest_format": "swap",
                                 "boot_index": -1, "device_name": "/dev/vdc",
                                 "volume_size": 1, "delete_on_termination": True})
        for name in cls.SERVERS:
            if name in ("ACTIVE", "IMAGE_BACKED"):
                continue
            uuid = cls.server_uuid(cls.SERVERS[name][0])
            if name == "OVER_QUOTA":
                for n in range(cls.SNAPSHOT_QUOTA + 1):
                    bdm_obj.create(db, ctx, cls._volume_bdm(
                        uuid, cls._quota_volume(n), 0 if n == 0 else None,
                        f"/dev/vd{chr(ord('a') + n)}"))
            else:
                bdm_obj.create(db, ctx, cls._volume_bdm(uuid, cls.VOL_ROOT, 0, "/dev/vda"))
        instance_obj.destroy(db, ctx, cls.server_uuid(cls.SERVERS["DELETED"][0]))

    @classmethod
    def _seed_actions(cls, db, ctx):
        uuid = cls.server_uuid(cls.SERVERS["ACTIONS"][0])
        names = ["create", "reboot", "createImage", "attach_volume", "detach_volume"]
        for request_id, name in zip(cls.ACTION_REQUESTS, names, strict=True):
            action_obj.action_start(db, ctx, uuid, name, request_id, "demo", cls.PROJECT)
        first = cls.ACTION_REQUESTS[0]
        host = COMPUTE_UP_HOST
        action_obj.event_start(db, ctx, uuid, first, "compute_build_and_run_instance",
                               host=host)
        action_obj.event_finish(db, ctx, uuid, first, "compute_build_and_run_instance",
                                result="Success", details="built")
        action_obj.event_start(db, ctx, uuid, first, "compute_attach_volume", host=host)
        action_obj.event_finish(db, ctx, uuid, first, "compute_attach_volume",
                                result="Error",
                                traceback="Traceback (most recent call last): boom",
                                details="device busy")
        deleted = cls.server_uuid(cls.SERVERS["DELETED"][0])
        action_obj.action_start(db, ctx, deleted, "delete", "req-de1e7ed0", "demo",
                                cls.PROJECT)

    @classmethod
    def seed(cls, db, ctx):
        cls._seed_servers(db, ctx)
        cls._seed_actions(db, ctx)

    @classmethod
    def build_app(cls, conf, db):
        conf.set_override("endpoint_override", "http://glance.example.test:9292",
                          group="glance")
        deps = Deps(conf, db=db, cinder=cls.make_cinder(), glance=FakeGlance(),
                    conductor=RecordingConductor())
        return create_app(conf, deps=deps), deps

    @staticmethod
    def image_mapping(image) -> list:
        """The decoded ``block_device_mapping`` property of an image (for assertions)."""
        return json.loads(image["properties"]["block_device_mapping"])


def _attach_server_uuid(n: int) -> str:
    return f"a77a0000-0000-4000-8000-{n:012x}"


def _attach_volume_uuid(n: int) -> str:
    return f"b01e0000-0000-4000-8000-{n:012x}"


class AttachConductor:
    """Conductor double for the attachment API.

    An attach *call* picks the next free ``/dev/vdX`` under the instance, creates
    a reserved Cinder attachment and the BDM, and returns the BDM dict; a
    *cast* only records. The Cinder attachment is completed at once, as the
    compute attach the real conductor casts would do. ``calls`` holds
    (method, kwargs) of everything; ``failures`` maps a volume id to the
    exception an attach call of it raises. ``request_uuids`` holds the
    ``volume_requests`` row of each cast.
    """

    def __init__(self, conf, db, cinder, failures=None):
        self.db, self.cinder, self.failures = db, cinder, failures or {}
        self.calls = []
        self.request_uuids = []

    def swap_volume(self, ctxt, **kwargs):
        self.calls.append(("swap_volume", kwargs))

    def volume_snapshot_create(self, ctxt, **kwargs):
        self.calls.append(("volume_snapshot_create", kwargs))

    def volume_snapshot_delete(self, ctxt, **kwargs):
        self.calls.append(("volume_snapshot_delete", kwargs))

    def attach_volume(self, ctxt, *, instance_uuid, volume_id, device=None, disk_bus=None,
                      device_type=None, tag=None, delete_on_termination=False,
                      multiattach=None, wait=False, request_uuid=None, read_only=False):
        if request_uuid is not None:
            self.request_uuids.append(request_uuid)
        self.calls.append(("attach_volume", dict(
            instance_uuid=instance_uuid, volume_id=volume_id, device=device,
            disk_bus=disk_bus, device_type=device_type, tag=tag,
            delete_on_termination=delete_on_termination, multiattach=multiattach,
            wait=wait, read_only=read_only)))
        if not wait:
            return None
        if volume_id in self.failures:
            raise self.failures[volume_id]()
        ctx = vs_context.get_admin_context()
        used = {b.device_name for b in bdm_obj.list_by_instance(self.db, ctx, instance_uuid)}
        name = next(f"/dev/vd{c}" for c in "bcdefghijklmnopqrstuvwxyz"
                    if f"/dev/vd{c}" not in used)
        attachment = self.cinder.attachment_create(ctx, volume_id, instance_uuid)
        # What the compute's attach (cast by the real conductor) ends with.
        self.cinder.attachment_update(ctx, attachment["id"], {"host": COMPUTE_UP_HOST}, name)
        self.cinder.attachment_complete(ctx, attachment["id"])
        bdm = bdm_obj.create(self.db, ctx, {
            "instance_uuid": instance_uuid, "source_type": "volume",
            "destination_type": "volume", "volume_id": volume_id, "device_name": name,
            "tag": tag, "delete_on_termination": delete_on_termination,
            "attachment_id": attachment["id"], "disk_bus": disk_bus or "virtio",
            "device_type": device_type or "disk"})
        return bdm.to_dict()

    def detach_volume(self, ctxt, *, instance_uuid, volume_id, attachment_id,
                      request_uuid=None):
        if request_uuid is not None:
            self.request_uuids.append(request_uuid)
        self.calls.append(("detach_volume", dict(instance_uuid=instance_uuid,
                                                 volume_id=volume_id,
                                                 attachment_id=attachment_id)))


NO_MULTIATTACH_HOST = "nomulti-compute"


class VolumeAttachmentsWorld(World):
    """The volume attachment tests (test_volume_attachments*.py).

    Servers of project ``PROJECT`` (token ``alice:<PROJECT>``) in the states
    the §2 attach/detach/swap gates care about, on an up compute and on a
    long-silent one; a FakeCinder with available, in-use, multiattach and
    migrating volumes whose Cinder attachments match the BDM rows; and an
    :class:`AttachConductor`.
    """

    PROJECT = "7e57000000000000000000000000a11c"
    OTHER_PROJECT = "07e4000000000000000000000000b0b0"
    HOST_DOWN = COMPUTE_DOWN_HOST
    server_uuid = staticmethod(_attach_server_uuid)
    volume_uuid = staticmethod(_attach_volume_uuid)
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
        "NO_MULTIATTACH_HOST": (15, "active", None, {"host": NO_MULTIATTACH_HOST,
                                                     "node": NO_MULTIATTACH_HOST}),
    }
    SERVER = {name: _attach_server_uuid(n) for name, (n, *_rest) in SERVERS.items()}
    # Volumes: (n, multiattach, attached to [(server name, device, tag, boot_index,
    # delete_on_termination, legacy: no attachment_id in the BDM)], extra volume values)
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
        "REBOOTING_DATA": (13, False, [("REBOOTING", "/dev/vdb", None, None, False, False)],
                           {}),
        "DETACHING": (14, False, [("SECOND", "/dev/vdc", None, None, False, False)],
                      {"status": "detaching"}),
        # Cinder's read-only flag is set on it (os-update_readonly_flag).
        "READ_ONLY": (15, False, [], {}),
        # The attach call fails in the conductor/compute with these (below 2.101).
        "TOO_MANY": (20, False, [], {}),
        "DEVICE_BUSY": (21, False, [], {}),
        "NO_TAGS": (22, False, [], {}),
    }
    VOLUME = {name: _attach_volume_uuid(n) for name, (n, *_rest) in VOLUMES.items()}
    VOLUME["UNKNOWN"] = _attach_volume_uuid(0xff)
    # What the conductor double raises for an attach call of these volumes.
    CONDUCTOR_FAILURES = {
        VOLUME["TOO_MANY"]: lambda: exception.TooManyDiskDevices(maximum=2),
        VOLUME["DEVICE_BUSY"]: lambda: exception.DevicePathInUse(path="/dev/vdz"),
        VOLUME["NO_TAGS"]: lambda: exception.TaggedAttachmentNotSupported(),
    }
    AttachConductor = AttachConductor

    @classmethod
    def make_cinder(cls) -> FakeCinder:
        cinder = FakeCinder()
        cinder.create_volume_type("shared", {"multiattach": "<is> True"})
        ctx = vs_context.get_admin_context()
        for name, (_n, multi, attached, extra) in cls.VOLUMES.items():
            cinder.create(ctx, 1, name.lower(), None, volume_type="shared" if multi else None,
                          volume_id=cls.VOLUME[name])
            for server, device, *_rest in attached:
                attachment = cinder.attachment_create(
                    ctx, cls.VOLUME[name], cls.SERVER[server],
                    connector={"host": COMPUTE_UP_HOST, "mountpoint": device},
                    mountpoint=device)
                cinder.attachment_complete(ctx, attachment["id"])
            cinder.volumes[cls.VOLUME[name]].update(extra)
        cinder.update_readonly_flag(ctx, cls.VOLUME["READ_ONLY"], True)
        cinder.calls.clear()
        return cinder

    @classmethod
    def _seed_bdms(cls, db, ctx, cinder):
        for name, (_n, _multi, attached, _extra) in cls.VOLUMES.items():
            volume_id = cls.VOLUME[name]
            entries = {e["server_id"]: e["attachment_id"]
                       for e in cinder.volumes[volume_id]["attachments"]}
            for server, device, tag, boot_index, dot, legacy in attached:
                bdm_obj.create(db, ctx, {
                    "instance_uuid": cls.SERVER[server], "source_type": "volume",
                    "destination_type": "volume", "volume_id": volume_id,
                    "boot_index": boot_index, "device_name": device, "tag": tag,
                    "delete_on_termination": dot, "disk_bus": "virtio",
                    "device_type": "disk",
                    "attachment_id": None if legacy else entries[cls.SERVER[server]]})

    @classmethod
    def seed(cls, db, ctx):
        _compute_services(db, ctx, down=(cls.HOST_DOWN,))
        # An up compute whose driver cannot share disks (doc/source/contributor/contract.rst §3.5).
        service_obj.heartbeat(db, ctx, host=NO_MULTIATTACH_HOST, binary="volumesvc-compute",
                              topic="compute", version=1,
                              capabilities={"supports_multiattach": False,
                                            "supports_extend_volume": True,
                                            "supports_tagged_attach_volume": True})
        _servers(db, ctx, cls.SERVERS, cls.server_uuid, project=cls.PROJECT, user="alice")
        # A local disk: never listed as an attachment.
        bdm_obj.create(db, ctx, {"instance_uuid": cls.SERVER["ACTIVE"],
                                 "source_type": "blank", "destination_type": "local",
                                 "guest_format": "swap", "boot_index": -1,
                                 "device_name": "/dev/vdz", "volume_size": 1,
                                 "delete_on_termination": True})

    @classmethod
    def build_app(cls, conf, db):
        conf.set_override("transport_url", "fake:/")
        cinder = cls.make_cinder()
        cls._seed_bdms(db, vs_context.get_admin_context(), cinder)
        deps = Deps(conf, db=db, cinder=cinder,
                    conductor=AttachConductor(conf, db, cinder, cls.CONDUCTOR_FAILURES))
        return create_app(conf, deps=deps), deps


class VolumeAttachmentsProgressWorld(VolumeAttachmentsWorld):
    """The attachment world on a compute that reports attach progress (2.106).

    The up compute runs the current service version, so a detach is shown
    ``detaching``, and the ACTIVE server has one failed attach of FREE2 (a
    400 before any device was reserved), kept as an ``error`` record.
    """

    FAILED_MESSAGE = "Volume b01e0000-0000-4000-8000-000000000007 was refused by Cinder."

    @classmethod
    def seed(cls, db, ctx):
        super().seed(db, ctx)
        service_obj.heartbeat(db, ctx, host=COMPUTE_UP_HOST, binary="volumesvc-compute",
                              topic="compute", version=version.SERVICE_VERSION,
                              capabilities={})
        attachment_status.record_failed_attach(
            db, ctx, instance_uuid=cls.SERVER["ACTIVE"], volume_id=cls.VOLUME["FREE2"],
            bdm_uuid=None, code=400, message=cls.FAILED_MESSAGE)


EXTEND_SHOWN = _attach_volume_uuid(0xe1)
EXTEND_HIDDEN = _attach_volume_uuid(0xe2)


@contextlib.contextmanager
def open_extend_stack():
    """Yield (stack, server): the whole service with volumes Cinder holds ``extending``.

    Why a running stack and not a world: what 2.105 changes happens in the
    compute after the event is answered; the tests see it in the event's
    instance action. One ACTIVE server with two attached 1 GiB volumes, each
    extended to 2 GiB and held ``extending``: ``EXTEND_SHOWN`` shows its
    target size, ``EXTEND_HIDDEN`` does not.
    """
    with tempfile.TemporaryDirectory(prefix="api-extend-") as tmp:
        stack = Stack(pathlib.Path(tmp))
        try:
            (server,) = stack.boot_active()
            ctx = stack.context()
            for volume_id in (EXTEND_SHOWN, EXTEND_HIDDEN):
                stack.cinder.create(ctx, 1, "data", "", volume_id=volume_id)
                stack.attach_volume(server, volume_id, version="2.100")
                stack.wait(lambda v=volume_id: stack.cinder.get(ctx, v)["status"] == "in-use",
                           what=f"{volume_id} in-use")
            stack.cinder.hold_extend = True
            for volume_id in (EXTEND_SHOWN, EXTEND_HIDDEN):
                stack.cinder.extend(ctx, volume_id, 2)
            stack.cinder.show_metadata(EXTEND_HIDDEN, "extend_new_size", None)
            yield stack, server
        finally:
            stack.stop()


def poll(check, count, delay):
    """``check()``'s result once it passes, tried ``count`` times.

    A failed assertion, or a key or index the response does not have yet, is
    another try after ``delay`` seconds.
    """
    for _attempt in range(count - 1):
        try:
            return check()
        except (AssertionError, LookupError):
            time.sleep(delay)
    return check()
