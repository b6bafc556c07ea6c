"""Host: embedded root preparation, the libvirt-qemu check, connection handling."""

import pytest

from tests.fixtures import virt as virt_fixtures
from volumesvc import exception
from volumesvc.virt import fake
from volumesvc.virt.libvirt import host as host_mod


def test_embed_root_parsing():
    assert host_mod.embed_root("qemu:///embed?root=/var/lib/x/libvirt") == "/var/lib/x/libvirt"
    assert host_mod.embed_root("qemu:///system") is None
    with pytest.raises(exception.ConfigInvalid):
        host_mod.embed_root("qemu:///embed")


def test_prepare_embed_root_writes_qemu_conf_once(tmp_path):
    host_mod.prepare_embed_root(str(tmp_path / "root"))
    qemu_conf = (tmp_path / "root" / "etc" / "qemu.conf").read_text()
    for line in ('user = "root"', 'group = "root"', 'stdio_handler = "file"',
                 'security_driver = "none"'):
        assert line in qemu_conf
    (tmp_path / "root" / "etc" / "qemu.conf").write_text("# operator's own\n")
    host_mod.prepare_embed_root(str(tmp_path / "root"))
    assert (tmp_path / "root" / "etc" / "qemu.conf").read_text() == "# operator's own\n"


def test_missing_qemu_user_is_a_clear_error():
    def getpwnam(name):
        raise KeyError(name)

    with pytest.raises(exception.HypervisorUnavailable, match="useradd --system"):
        host_mod.check_qemu_user(getpwnam)


def test_open_failure_is_hypervisor_unavailable():
    host = host_mod.Host("xen:///nope", libvirt_module=fake.FakeLibvirt())
    with pytest.raises(exception.HypervisorUnavailable, match="xen:///nope"):
        host.get_connection()


def test_connection_is_reused_and_event_loop_registered():
    lv = virt_fixtures.RecordingLibvirt()
    host = host_mod.Host("qemu:///embed?root=/nonexistent", libvirt_module=lv)
    assert host.get_connection() is host.get_connection()
    assert lv.event_impl_registered
    assert len(lv.opened) == 1
    host.close()
    assert not lv.opened[0].alive
    host.get_connection()
    assert len(lv.opened) == 2


def test_unknown_guest():
    host = host_mod.Host("qemu:///system", libvirt_module=fake.FakeLibvirt())
    with pytest.raises(exception.InstanceNotFound):
        host.get_guest("0b0c4f3e-0000-4000-8000-000000000000")
    assert host.find_guest("0b0c4f3e-0000-4000-8000-000000000000") is None


def test_device_removed_event_reaches_the_waiter():
    lv = fake.FakeLibvirt()
    host = host_mod.Host("qemu:///system", libvirt_module=lv)
    conn = host.get_connection()
    dom = conn.defineXML("<domain type='qemu'><name>d</name><uuid>u-1</uuid>"
                         "<memory>65536</memory><vcpu>1</vcpu><devices/></domain>")
    event = host.expect_device_removed("u-1", "ua-x")
    conn.emit_device_removed(dom, "ua-other")
    assert not event.is_set()
    conn.emit_device_removed(dom, "ua-x")
    assert event.is_set()
    host.forget_device_removed("u-1", "ua-x")
