"""The connector Cinder receives is os-brick's, from this host's configuration.

os-brick's privileged calls are replaced at their boundary, the privsep
channel of ``os_brick.privileged.default``: every ``remote_call`` it would
send to the root daemon is answered here as a host with an iSCSI initiator
name, no ScaleIO driver and no root filesystem UUID
would answer. Everything above (os-brick's connectors and
``get_connector_properties``, our adapter) runs for real.
"""

import shlex
import sys
import threading

import os_brick.privileged
import pytest
from oslo_concurrency import processutils
from oslo_config import cfg
from oslo_utils import netutils

from volumesvc import exception
from volumesvc import privsep as volumesvc_privsep
from volumesvc.conf import get_conf
from volumesvc.virt import fake
from volumesvc.virt.libvirt.volume import brick

INITIATOR = "iqn.1993-08.org.debian:01:0123456789ab"


class PrivsepChannel:
    """What os-brick's privsep daemon would answer, and what it was asked."""

    running = True

    def __init__(self):
        self.calls = []

    def remote_call(self, name, args, kwargs, timeout):
        self.calls.append((name, args))
        if name == "os_brick.privileged.rootwrap.execute_root":
            if args == ("cat", "/etc/iscsi/initiatorname.iscsi"):
                return f"## set by the installer\nInitiatorName={INITIATOR}\n", ""
            raise processutils.ProcessExecutionError(cmd=" ".join(args), exit_code=1)
        if name == "os_brick.privileged.scaleio.get_guid":
            raise OSError("no such device: /dev/scini")
        if name == "os_brick.privileged.nvmeof.get_system_uuid":
            return "4c4c4544-0000-1000-8000-000000000001"
        return None

    def close(self):
        pass


@pytest.fixture
def privsep(monkeypatch):
    def install(**kwargs):
        channel = PrivsepChannel(**kwargs)
        monkeypatch.setattr(os_brick.privileged.default, "channel", channel)
        return channel
    return install


def test_connector_carries_my_ip_host_and_initiator(conf, driver, privsep):
    channel = privsep()
    conf.set_override("my_ip", "192.0.2.10")
    conf.set_override("host", "compute-7")
    connector = driver.get_volume_connector()
    assert connector["ip"] == "192.0.2.10" and connector["host"] == "compute-7"
    assert connector["initiator"] == INITIATOR
    assert connector["multipath"] is False and connector["enforce_multipath"] is False
    assert connector["os_type"] == "linux" and connector["platform"]
    # The initiator name was read as root, through privsep.
    assert ("os_brick.privileged.rootwrap.execute_root",
            ("cat", "/etc/iscsi/initiatorname.iscsi")) in channel.calls


def test_connector_multipath_follows_config(conf, driver, privsep):
    privsep()
    conf.set_override("volume_use_multipath", True, group="libvirt")
    conf.set_override("volume_enforce_multipath", True, group="libvirt")
    connector = driver.get_volume_connector()
    assert connector["multipath"] is True and connector["enforce_multipath"] is True


def _initiator_reads(channel):
    return [c for c in channel.calls if c[1] == ("cat", "/etc/iscsi/initiatorname.iscsi")]


def test_connector_is_reused_and_each_caller_gets_its_own_copy(conf, driver, privsep):
    channel = privsep()
    first = driver.get_volume_connector()
    first["mountpoint"] = "/dev/vdb"  # what Cinder's adapter does to its copy
    second = driver.get_volume_connector()
    assert len(_initiator_reads(channel)) == 1
    assert "mountpoint" not in second and second["initiator"] == INITIATOR


def test_a_forgotten_connector_is_built_again(conf, driver, privsep):
    """After a failed attach: a changed initiator name reaches Cinder with the next one."""
    channel = privsep()
    driver.get_volume_connector()
    driver.forget_volume_connector()
    driver.get_volume_connector()
    assert len(_initiator_reads(channel)) == 2


def test_max_age_zero_builds_the_connector_per_call(conf, fake_libvirt, privsep):
    """As Nova: every attachment asks os-brick."""
    conf.set_override("volume_connector_max_age", 0, group="libvirt")
    channel = privsep()
    driver = fake.FakeDriver(conf, libvirt_module=fake_libvirt)
    driver.get_volume_connector()
    driver.get_volume_connector()
    assert len(_initiator_reads(channel)) == 2


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _counting_build():
    built = []

    def build():
        built.append(len(built) + 1)
        return {"host": "h", "build": len(built)}
    return build, built


def test_the_connector_is_built_again_once_older_than_max_age():
    build, built = _counting_build()
    clock = _Clock()
    cache = brick.ConnectorCache(build, 300, clock=clock)
    assert cache.get()["build"] == 1
    clock.now += 299.9
    assert cache.get()["build"] == 1
    clock.now += 0.1
    assert cache.get()["build"] == 2
    assert built == [1, 2]


def test_callers_arriving_during_a_build_share_its_result():
    """An attach storm on a cold cache runs os-brick once, not once per attach."""
    started, release = threading.Event(), threading.Event()
    calls = []

    def slow_build():
        calls.append(1)
        started.set()
        release.wait(5)
        return {"host": "h"}

    cache = brick.ConnectorCache(slow_build, 300)
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get())) for _ in range(8)]
    threads[0].start()
    assert started.wait(5)
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(5)
    assert len(calls) == 1 and results == [{"host": "h"}] * 8


def test_a_failed_build_is_not_kept():
    attempts = []

    def build():
        attempts.append(1)
        if len(attempts) == 1:
            raise exception.VirtDriverError(reason="building the volume connector: no nvme")
        return {"host": "h"}

    cache = brick.ConnectorCache(build, 300)
    with pytest.raises(exception.VirtDriverError):
        cache.get()
    assert cache.get() == {"host": "h"} and len(attempts) == 2


def test_my_ip_defaults_to_the_default_route_address():
    conf = get_conf(args=[], default_config_files=[])
    assert conf.my_ip == netutils.get_my_ipv4()


@pytest.fixture
def global_conf_restored():
    yield
    for group in ("privsep_osbrick", "privsep_volumesvc", "os_brick"):
        for name in list(cfg.CONF[group]):
            cfg.CONF.clear_override(name, group=group)


def test_the_driver_hands_privsep_and_os_brick_settings_to_the_libraries(
        conf, fake_libvirt, tmp_path, global_conf_restored):
    conf.set_override("thread_pool_size", 3, group="privsep_osbrick")
    fake.FakeDriver(conf, libvirt_module=fake_libvirt)
    privsep_conf = os_brick.privileged.default.conf
    assert privsep_conf.thread_pool_size == 3
    assert privsep_conf.capabilities == [21, 2]  # CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH
    # No config file in this test's conf, so nothing follows the module.
    assert shlex.split(privsep_conf.helper_command) == shlex.split(brick.root_helper()) + [
        sys.executable, "-m", "oslo_privsep.daemon"]
    assert cfg.CONF.os_brick.lock_path == str(tmp_path / "state" / "lock")
    # volumesvc's own context: the one capability, the same kind of helper.
    own = volumesvc_privsep.dac_override_pctxt.conf
    assert own.capabilities == [1]  # CAP_DAC_OVERRIDE
    assert own.helper_command == privsep_conf.helper_command


def test_explicit_helper_command_is_kept(conf, driver, global_conf_restored):
    conf.set_override("helper_command", "sudo privsep-helper --config-file /etc/v.conf",
                      group="privsep_osbrick")
    brick.setup(conf)
    assert os_brick.privileged.default.conf.helper_command == (
        "sudo privsep-helper --config-file /etc/v.conf")


def test_helper_command_passes_the_config_files(tmp_path):
    conf_file = tmp_path / "volumesvc.conf"
    conf_file.write_text("[DEFAULT]\n")
    conf = get_conf(args=["--config-file", str(conf_file)], default_config_files=[])
    helper = shlex.split(volumesvc_privsep.helper_command(conf))
    assert helper[helper.index("--config-file") + 1] == str(conf_file)
    assert ("sudo" in helper) == (brick.root_helper() == "sudo")
