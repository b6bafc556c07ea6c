"""Fixtures for the virt unit tests: fresh config, the fake libvirt, volume files."""

import os
import uuid

import pytest

from tests.fixtures import virt as virt_fixtures
from volumesvc.conf import get_conf
from volumesvc.virt import fake


@pytest.fixture
def conf(tmp_path):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", str(tmp_path / "state"))
    conf.set_override("device_detach_timeout", 1, group="libvirt")
    conf.set_override("domain_state_timeout", 2, group="libvirt")
    return conf


@pytest.fixture
def fake_libvirt():
    return virt_fixtures.RecordingLibvirt()


@pytest.fixture
def driver(conf, fake_libvirt):
    drv = fake.FakeDriver(conf, libvirt_module=fake_libvirt)
    drv.init_host(conf.host)
    yield drv
    for guest in drv.host.list_guests():
        drv.destroy({"uuid": guest.uuid})
    drv.cleanup_host()


@pytest.fixture
def make_volume(tmp_path):
    """A sparse file standing in for a Cinder volume; returns connection_info."""
    def _make(size=1 << 30, multiattach=False, **data):
        vol_id = str(uuid.uuid4())
        path = tmp_path / f"volume-{vol_id}"
        with open(path, "wb"):
            pass
        os.truncate(path, size)
        info = {"driver_volume_type": "local",
                "data": {"device_path": str(path), **data},
                "serial": vol_id}
        if multiattach:
            info["multiattach"] = True
        return info
    return _make


@pytest.fixture
def instance():
    return {"uuid": str(uuid.uuid4()), "memory_mb": 64, "vcpus": 1}
