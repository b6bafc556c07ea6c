"""The guest's serial console: its domain XML, its log, and reading the log back."""

import os
import xml.etree.ElementTree as ET

import pytest

from volumesvc import exception
from volumesvc.virt import instance_path
from volumesvc.virt.libvirt import config, console


def _bdm(connection_info, dev, boot_index=None):
    return {"connection_info": connection_info, "mount_device": dev,
            "boot_index": boot_index, "disk_bus": "scsi", "device_type": "disk"}


def _bdi(*bdms):
    return {"root_device_name": None, "block_device_mapping": list(bdms)}


# -- domain XML --------------------------------------------------------------

def test_domain_with_console_logs_first_serial_port():
    dom = ET.fromstring(config.DomainConfig(
        uuid="u-1", name="instance-1",
        console=config.SerialConsoleConfig(log_path="/i/u-1/console.log")).to_xml())
    serial = dom.find("devices/serial")
    assert serial.get("type") == "pty"
    assert serial.find("log").attrib == {"file": "/i/u-1/console.log", "append": "off"}
    assert serial.find("target").get("port") == "0"
    console_el = dom.find("devices/console")
    assert console_el.find("target").attrib == {"type": "serial", "port": "0"}
    assert dom.find("os/bios").get("useserial") == "yes"
    assert config.console_log_path(ET.tostring(dom, encoding="unicode")) == \
        "/i/u-1/console.log"


def test_domain_without_console_has_no_serial_port():
    xml = config.DomainConfig(uuid="u", name="n").to_xml()
    dom = ET.fromstring(xml)
    assert dom.find("devices/serial") is None and dom.find("os/bios") is None
    assert config.console_log_path(xml) is None


def test_console_log_path_of_a_file_serial_port_and_not_of_other_ports():
    xml = ("<domain><devices>"
           "<serial type='file'><source path='/p/one'/><target port='1'/></serial>"
           "<serial type='file'><source path='/p/zero'/><target port='0'/></serial>"
           "</devices></domain>")
    assert config.console_log_path(xml) == "/p/zero"
    assert config.console_log_path(
        "<domain><devices><serial type='pty'><target port='0'/></serial>"
        "</devices></domain>") is None


# -- reading the log ---------------------------------------------------------

def test_read_log_returns_everything_below_the_cap(tmp_path):
    path = tmp_path / "console.log"
    path.write_bytes(b"one\r\ntwo\r\nthree")
    assert console.read_log(str(path)) == b"one\r\ntwo\r\nthree"


def test_read_log_keeps_only_the_newest_bytes_even_mid_line(tmp_path):
    path = tmp_path / "console.log"
    path.write_bytes(b"".join(b"line %05d\n" % i for i in range(20000)))  # 220,000 bytes
    data = console.read_log(str(path))
    assert len(data) == console.MAX_CONSOLE_BYTES
    assert data.endswith(b"line 19999\n")
    # The cut falls inside a line: the first one is partial, as Nova returns it.
    assert not data.startswith(b"line ")
    assert console.read_log(str(path), max_bytes=12) == b"\nline 19999\n"


def test_read_log_missing_file_is_empty(tmp_path):
    assert console.read_log(str(tmp_path / "never-started.log")) == b""


def test_read_log_joins_rotated_logs_oldest_first_up_to_the_cap(tmp_path):
    path = tmp_path / "console.log"
    path.write_bytes(b"newest\n")
    (tmp_path / "console.log.0").write_bytes(b"older\n")
    (tmp_path / "console.log.1").write_bytes(b"oldest\n")
    assert console.read_log(str(path)) == b"oldest\nolder\nnewest\n"
    assert console.read_log(str(path), max_bytes=10) == b"er\nnewest\n"


# -- through the driver, on the fake libvirt ---------------------------------

def test_spawn_boots_from_root_volume_and_logs_its_console(driver, conf, instance,
                                                           make_volume):
    root, data = make_volume(), make_volume()
    driver.spawn(instance, _bdi(_bdm(data, "/dev/sdb"), _bdm(root, "/dev/sda", boot_index=0)))
    dom = ET.fromstring(driver.get_domain_xml(instance))
    boots = {d.findtext("serial"): d.find("boot") for d in dom.iter("disk")}
    assert boots[root["serial"]].get("order") == "1" and boots[data["serial"]] is None
    log = instance_path.console_log(conf, instance["uuid"])
    assert dom.find("devices/serial/log").get("file") == log
    output = driver.get_console_output(instance)
    assert f"Booting from Hard Disk sda (serial {root['serial']})".encode() in output
    with open(log, "rb") as f:
        assert output == f.read()


def test_console_of_a_stopped_server_is_its_last_run(driver, instance, make_volume):
    driver.spawn(instance, _bdi(_bdm(make_volume(), "/dev/sda", boot_index=0)))
    before = driver.get_console_output(instance)
    driver.power_off(instance)
    assert driver.get_console_output(instance) == before != b""


def test_each_start_begins_a_new_log_a_soft_reboot_keeps_it(driver, conf, instance,
                                                            make_volume):
    bdi = _bdi(_bdm(make_volume(), "/dev/sda", boot_index=0))
    driver.spawn(instance, bdi)
    log = instance_path.console_log(conf, instance["uuid"])
    with open(log, "ab") as f:
        f.write(b"printed before the reboot\n")
    driver.reboot(instance, bdi, "SOFT")
    assert b"printed before the reboot" in driver.get_console_output(instance)
    driver.reboot(instance, bdi, "HARD")
    output = driver.get_console_output(instance)
    assert b"printed before the reboot" not in output
    assert output.count(b"fake firmware: starting") == 1


def test_console_of_a_server_that_boots_nothing(driver, instance):
    driver.spawn(instance, None)
    assert b"No bootable device." in driver.get_console_output(instance)


def test_console_of_an_unknown_server(driver, instance):
    with pytest.raises(exception.InstanceNotFound):
        driver.get_console_output(instance)


def test_domain_without_serial_port_has_no_console(driver, instance):
    # A domain defined without the console (by hand, or before there was one).
    driver.host.define_guest(config.DomainConfig(uuid=instance["uuid"], name="bare").to_xml())
    with pytest.raises(exception.ConsoleNotAvailable):
        driver.get_console_output(instance)


def test_console_log_directory_is_made_for_a_volume_backed_server(driver, conf, instance,
                                                                  make_volume):
    directory = instance_path.instance_dir(conf, instance["uuid"])
    assert not os.path.exists(directory)
    driver.spawn(instance, _bdi(_bdm(make_volume(), "/dev/sda", boot_index=0)))
    assert os.path.isfile(os.path.join(directory, "console.log"))
