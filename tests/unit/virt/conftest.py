"""Fixtures for the virt unit tests: fresh config, the fake libvirt, volume files."""

import os
import uuid

import pytest

from tests.fixtures import virt as virt_fixtures
from tests.unit.virt import brick_helpers
from volumesvc.conf import get_conf
from volumesvc.virt import fake


@pytest.fixture
def conf(tmp_path):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", str(tmp_path / "state"))
    conf.set_override("device_detach_timeout", 1, group="libvirt")
    conf.set_override("device_detach_attempts", 2, group="libvirt")
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


@pytest.fixture
def host_calls(monkeypatch, tmp_path):
    """Doubles for connect/disconnect/extend of every connector class used here."""
    device = tmp_path / "sdq"  # what os-brick would have found under /dev
    device.write_bytes(b"")

    def install(cls, path=str(device), new_size=2 * brick_helpers.GiB):
        recorder = brick_helpers.Recorder
        return {"connect": recorder({"type": "block", "path": path}).install(
                    monkeypatch, cls, "connect_volume"),
                "disconnect": recorder().install(monkeypatch, cls, "disconnect_volume"),
                "extend": recorder(new_size).install(monkeypatch, cls, "extend_volume")}
    return install, str(device)
