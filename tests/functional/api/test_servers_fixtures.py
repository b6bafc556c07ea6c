"""Gabbi fixtures for the /servers journeys (re-exported by ``fixtures.py``).

The world every servers-*.yaml file starts from: one up compute at the
current service version, three flavors, a FakeCinder with fixed-id volume
types, volumes and a snapshot, a FakeGlance with a plain image and a
volume-backed snapshot image (``bdm_v2``), and a conductor double that
records casts instead of sending them. The fixed ids below are what the
YAML files use. No test functions live here.
"""

import json

from tests.fixtures.cinder import FakeCinder
from tests.fixtures.glance import FakeGlance
from volumesvc import context as vs_context
from volumesvc import version
from volumesvc.api.app import create_app
from volumesvc.api.deps import Deps
from volumesvc.objects import flavor as flavor_obj
from volumesvc.objects import service as service_obj

COMPUTE_HOST = "compute-up"
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
IMAGE_UNKNOWN = "1a6e0000-0000-4000-8000-0000000000ff"


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


def make_cinder() -> FakeCinder:
    cinder = FakeCinder(cross_az_attach=False)
    cinder.create_volume_type("fast", type_id=TYPE_FAST)
    cinder.create_volume_type("shared", {"multiattach": "<is> True"}, type_id=TYPE_MULTI)
    ctx = vs_context.get_admin_context()
    for volume_id, kwargs in ((VOL_BOOT, {"image_id": IMAGE}), (VOL_DATA, {}),
                              (VOL_MULTI, {"volume_type": "shared", "image_id": IMAGE}),
                              (VOL_OTHER_AZ, {"availability_zone": "other"})):
        cinder.create(ctx, 2, volume_id, None, volume_id=volume_id, **kwargs)
    cinder.create_snapshot_force(ctx, VOL_BOOT, snapshot_id=SNAPSHOT)
    cinder.calls.clear()
    return cinder


def make_glance() -> FakeGlance:
    glance = FakeGlance()
    ctx = vs_context.get_admin_context()
    mapping = [{"source_type": "snapshot", "destination_type": "volume",
                "snapshot_id": SNAPSHOT, "boot_index": 0, "device_name": "/dev/vda",
                "delete_on_termination": True, "volume_size": 3, "volume_type": "fast",
                "volume_id": None, "image_id": None, "guest_format": None,
                "no_device": None, "tag": None, "disk_bus": "virtio",
                "device_type": "disk"}]
    for image_id, kwargs in (
            (IMAGE, {"data": b"qcow2", "min_disk": 1}),
            (IMAGE_BFV_SNAPSHOT, {"properties": {
                "bdm_v2": True, "root_device_name": "/dev/vda",
                "block_device_mapping": json.dumps(mapping)}}),
            (IMAGE_QUEUED, {"size": None})):
        glance.create(ctx, name=image_id, owner="admin-project", image_id=image_id, **kwargs)
    glance.calls.clear()
    return glance


def seed(db, ctx, compute_version=version.SERVICE_VERSION):
    service_obj.heartbeat(db, ctx, host=COMPUTE_HOST, binary="volumesvc-compute",
                          topic="compute", version=compute_version, capabilities={})
    for flavorid, name, extra in (("101", "test.small", {}),
                                  ("102", "test.ephemeral", {"ephemeral_gb": 1, "swap": 512}),
                                  ("103", "test.disabled", {"disabled": True})):
        flavor_obj.create(db, ctx, {"flavorid": flavorid, "name": name, "memory_mb": 512,
                                    "vcpus": 1, "root_gb": 1,
                                    "extra_specs": {"hw:cpu_policy": "shared"}, **extra})


def build_app(conf, db):
    """(app, deps) with the fakes above; used by gabbi and the pytest tests."""
    deps = Deps(conf, db=db, cinder=make_cinder(), glance=make_glance(),
                conductor=RecordingConductor())
    return create_app(conf, deps=deps), deps


def servers_fixture_class(base, compute_version):
    """A gabbi fixture on ``base`` (fixtures.APIFixture) with this world."""

    class _Fixture(base):
        def seed(self, db, ctx):
            seed(db, ctx, compute_version)

        def start_fixture(self):
            super().start_fixture()
            app, self.deps = build_app(self.conf, self.db)
            from tests.functional.api import fixtures

            fixtures._CURRENT["app"] = app

    return _Fixture
