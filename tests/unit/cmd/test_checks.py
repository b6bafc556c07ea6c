"""Which settings the start-up and upgrade-check warnings name, per setting."""

import pytest

from volumesvc.cmd import checks
from volumesvc.conf import get_conf


@pytest.fixture
def conf():
    conf = get_conf(default_config_files=[])
    conf.set_override("my_ip", "192.0.2.10")
    conf.set_override("connection_uri", "qemu:///system", group="libvirt")
    conf.set_override("virt_type", "kvm", group="libvirt")
    conf.set_override("guest_memory_cap_mb", 0, group="libvirt")
    return conf


def options(findings):
    return [f.option for f in findings]


def test_production_compute_settings_pass(conf, tmp_path):
    kvm = tmp_path / "kvm"
    kvm.touch()
    assert checks.compute_findings(conf, kvm_device=str(kvm)) == []


@pytest.mark.parametrize("group, name, value, option", [
    (None, "my_ip", "127.0.0.1", "[DEFAULT] my_ip"),
    (None, "my_ip", "::1", "[DEFAULT] my_ip"),
    ("libvirt", "connection_uri", "qemu:///embed?root=/tmp/x", "[libvirt] connection_uri"),
    ("libvirt", "virt_type", "qemu", "[libvirt] virt_type"),
    ("libvirt", "guest_memory_cap_mb", 64, "[libvirt] guest_memory_cap_mb"),
], ids=["my_ip-127.0.0.1", "my_ip-ipv6-loopback", "connection_uri-embed", "virt_type-qemu",
        "guest_memory_cap_mb-64"])
def test_each_single_machine_setting_is_named(conf, tmp_path, group, name, value, option):
    kvm = tmp_path / "kvm"
    kvm.touch()
    conf.set_override(name, value, group=group)
    findings = checks.compute_findings(conf, kvm_device=str(kvm))
    assert options(findings) == [option]
    assert f"change {option}" in str(findings[0])


def test_kvm_without_the_device_is_named(conf, tmp_path):
    findings = checks.compute_findings(conf, kvm_device=str(tmp_path / "absent"))
    assert options(findings) == ["[libvirt] virt_type"]
    assert "missing" in findings[0].message


def test_libvirt_settings_are_not_checked_for_another_driver(conf):
    conf.set_override("compute_driver", "fake")
    conf.set_override("virt_type", "qemu", group="libvirt")
    conf.set_override("my_ip", "127.0.0.1")
    assert options(checks.compute_findings(conf)) == ["[DEFAULT] my_ip"]


def test_defaults_name_every_single_machine_libvirt_setting():
    """The defaults are embedded QEMU under emulation; guests get their flavor's memory."""
    conf = get_conf(default_config_files=[])
    named = set(options(checks.compute_findings(conf)))
    assert {"[libvirt] connection_uri", "[libvirt] virt_type"} <= named
    assert "[libvirt] guest_memory_cap_mb" not in named


@pytest.mark.parametrize("url, hosts, warned", [
    ("sqlite:////tmp/x.sqlite", ["a"], False),
    ("sqlite:////tmp/x.sqlite", ["a", "a"], False),
    ("sqlite:////tmp/x.sqlite", ["a", "b"], True),
    ("postgresql+psycopg2://u@db/vs", ["a", "b"], False),
], ids=["sqlite-one-host", "sqlite-one-host-twice", "sqlite-two-hosts", "postgresql-two-hosts"])
def test_sqlite_is_named_once_conductors_are_on_two_hosts(conf, url, hosts, warned):
    conf.set_override("connection", url, group="database")
    findings = checks.database_findings(conf, hosts)
    assert options(findings) == (["[database] connection"] if warned else [])
    if warned:
        assert "a, b" in findings[0].message
