"""load_driver, capability configuration, the volume connector, module boundaries."""

import ast
import pathlib

import pytest

from tests.fixtures import virt as virt_fixtures
from volumesvc import exception, virt
from volumesvc.virt import driver, fake
from volumesvc.virt.libvirt import driver as libvirt_driver

VIRT = pathlib.Path(driver.__file__).parent


def test_load_fake_driver(conf):
    conf.set_override("compute_driver", "fake")
    drv = virt.load_driver(conf)
    assert isinstance(drv, fake.FakeDriver)
    assert isinstance(drv, libvirt_driver.LibvirtDriver)


def test_load_libvirt_driver_with_injected_binding(conf):
    lv = fake.FakeLibvirt()
    drv = virt.load_driver(conf, libvirt_module=lv)
    assert type(drv) is libvirt_driver.LibvirtDriver
    assert drv.libvirt is lv


@pytest.mark.parametrize("name", ["xenapi", "volumesvc.virt.nope:Driver",
                                  "volumesvc.virt.fake:NoSuchDriver", "volumesvc.virt.fake:"],
                         ids=["unknown-name", "no-module", "no-class", "empty-class"])
def test_unknown_driver_is_a_config_error(conf, name):
    conf.set_override("compute_driver", name)
    with pytest.raises(exception.ConfigInvalid, match=name.split(":")[0]):
        virt.load_driver(conf)


def test_a_driver_outside_the_package_is_loaded_by_path(conf, monkeypatch):
    """``package.module:Class``: how a benchmark or a test runs its own driver."""
    monkeypatch.setenv(virt_fixtures.RESERVE_DELAY_ENV, "0.25")
    conf.set_override("compute_driver", "tests.fixtures.virt:SlowReserveDriver")
    drv = virt.load_driver(conf)
    assert type(drv) is virt_fixtures.SlowReserveDriver and drv.reserve_delay == 0.25


def test_bad_cache_modes_fail_at_start(conf):
    conf.set_override("disk_cachemodes", ["file=fast"], group="libvirt")
    with pytest.raises(exception.ConfigInvalid):
        fake.FakeDriver(conf)


def test_disabled_capabilities_are_per_driver(conf):
    conf.set_override("disabled_capabilities", ["supports_multiattach",
                                                "supports_tagged_attach_volume"], group="virt")
    limited = fake.FakeDriver(conf)
    assert limited.capabilities == {"supports_multiattach": False,
                                    "supports_extend_volume": True,
                                    "supports_tagged_attach_volume": False}
    conf.clear_override("disabled_capabilities", group="virt")
    assert fake.FakeDriver(conf).capabilities["supports_multiattach"] is True
    assert libvirt_driver.LibvirtDriver.capabilities["supports_multiattach"] is True


def test_base_driver_advertises_nothing(conf):
    base = driver.ComputeDriver(conf)
    assert not any(base.capabilities.values())
    with pytest.raises(NotImplementedError):
        base.spawn({"uuid": "u"}, None)


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_virt_never_imports_the_database():
    for path in VIRT.rglob("*.py"):
        assert not any(m.startswith("volumesvc.db") for m in _imports(path)), path


def test_the_driver_interface_never_imports_a_driver():
    """Regression: driver.py imported fake.py and libvirt/driver.py (which import it)."""
    drivers = {"volumesvc.virt.fake", "volumesvc.virt.libvirt", "volumesvc.virt.libvirt.driver"}
    assert not drivers & set(_imports(VIRT / "driver.py"))
    assert not drivers & set(_imports(VIRT / "__init__.py"))


def test_only_host_and_guest_import_libvirt():
    importers = {path.relative_to(VIRT).as_posix() for path in VIRT.rglob("*.py")
                 if "libvirt" in set(_imports(path))}
    assert importers <= {"libvirt/host.py", "libvirt/guest.py"}
