"""The config drive's files and its ISO, read back with pycdlib itself."""

import base64
import io
import json
import xml.etree.ElementTree as ET

import pycdlib
import pytest

from volumesvc.virt import configdrive
from volumesvc.virt.libvirt import config, config_drive

INSTANCE = {"uuid": "8c0c1ba4-2f1d-4a39-9f37-1ed0f7b6d001", "display_name": "web 1",
            "hostname": "web-1", "launch_index": 2, "availability_zone": "az1",
            "project_id": "p1", "metadata": {"a": "b"}, "key_name": "k",
            "key_data": "ssh-ed25519 AAAAkey", "config_drive": "True",
            "user_data": base64.b64encode(b"#!/bin/sh\necho hi\n").decode()}


def _read(path, **where):
    """One file of the ISO at ``path``, found by ``rr_path``/``joliet_path``/``iso_path``."""
    iso = pycdlib.PyCdlib()
    iso.open(path)
    try:
        out = io.BytesIO()
        iso.get_file_from_iso_fp(out, **where)
        return out.getvalue(), iso.pvd.volume_identifier.decode().rstrip()
    finally:
        iso.close()


def test_iso_has_the_config_2_label_and_every_file_by_rock_ridge_and_joliet(tmp_path):
    files = configdrive.files(INSTANCE, [])
    path = str(tmp_path / "disk.config")
    configdrive.write_iso(files, path)
    for rel, data in files.items():
        assert _read(path, rr_path="/" + rel) == (data, "config-2")
        assert _read(path, joliet_path="/" + rel)[0] == data
    # The plain ISO 9660 names (what a reader without extensions sees).
    assert _read(path, iso_path="/OPENSTACK/LATEST/USER_DATA;1")[0] == b"#!/bin/sh\necho hi\n"
    assert _read(path, iso_path="/OPENSTACK/2012_08_10/META_DATA.JSON;1")[0] == \
        files["openstack/2012-08-10/meta_data.json"]
    assert not (tmp_path / "disk.config.partial").exists()


def test_read_iso_gives_back_what_was_written(tmp_path):
    files = {"openstack/latest/meta_data.json": b"{}", "openstack/latest/user_data": b"\x00\xff"}
    configdrive.write_iso(files, str(tmp_path / "d.iso"))
    assert configdrive.read_iso(str(tmp_path / "d.iso")) == ("config-2", files)


def test_rewriting_replaces_the_drive(tmp_path):
    path = str(tmp_path / "d.iso")
    configdrive.write_iso({"openstack/latest/user_data": b"one"}, path)
    configdrive.write_iso({"openstack/latest/meta_data.json": b"{}"}, path)
    assert configdrive.read_iso(path)[1] == {"openstack/latest/meta_data.json": b"{}"}


def test_every_version_directory_and_latest_are_written():
    files = configdrive.files(INSTANCE, [])
    versions = {name.split("/")[1] for name in files}
    assert versions == set(configdrive.VERSIONS) | {"latest"}
    assert "openstack/2013-04-04/vendor_data.json" not in files
    assert json.loads(files["openstack/2013-10-17/vendor_data.json"]) == {}
    assert "openstack/2016-06-30/vendor_data2.json" not in files
    assert json.loads(files["openstack/2016-10-06/vendor_data2.json"]) == {}


def test_meta_data_of_latest():
    device = configdrive.disk_device(bus="scsi", serial="vol-1", address="0:0:0:1", tag="db")
    meta = json.loads(configdrive.files(INSTANCE, [device])["openstack/latest/meta_data.json"])
    assert meta["uuid"] == INSTANCE["uuid"]
    assert (meta["name"], meta["hostname"], meta["launch_index"]) == ("web 1", "web-1", 2)
    assert (meta["availability_zone"], meta["project_id"], meta["meta"]) == (
        "az1", "p1", {"a": "b"})
    assert meta["public_keys"] == {"k": "ssh-ed25519 AAAAkey"}
    assert meta["keys"] == [{"name": "k", "type": "ssh", "data": "ssh-ed25519 AAAAkey"}]
    assert meta["devices"] == [{"type": "disk", "bus": "scsi", "serial": "vol-1",
                                "address": "0:0:0:1", "tags": ["db"]}]
    assert meta["dedicated_cpus"] == []


def test_no_user_data_no_key_no_metadata():
    bare = {"uuid": "u", "display_name": "n", "hostname": "n"}
    files = configdrive.files(bare, [])
    assert not [name for name in files if name.endswith("user_data")]
    meta = json.loads(files["openstack/latest/meta_data.json"])
    assert not {"public_keys", "keys", "meta"} & set(meta)
    assert meta["launch_index"] == 0


def test_an_x509_key_pair_is_typed_as_one():
    cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    meta = json.loads(configdrive.files(dict(INSTANCE, key_data=cert), [])[
        "openstack/latest/meta_data.json"])
    assert meta["keys"][0]["type"] == "x509"


@pytest.mark.parametrize(("force", "fields", "wanted"), [
    (False, {}, False),
    (True, {}, True),
    (False, {"config_drive": "True"}, True),
    (False, {"config_drive": ""}, False),
    (False, {"image_properties": {"img_config_drive": "mandatory"}}, True),
    (False, {"image_properties": {"img_config_drive": "optional"}}, False),
])
def test_required(force, fields, wanted):
    assert configdrive.required(force, dict({"uuid": "u"}, **fields)) is wanted


def test_devices_list_only_tagged_disks_with_their_scsi_address():
    disks = [config.DiskConfig(target_dev="sda", target_bus="scsi", serial="root", scsi_unit=0),
             config.DiskConfig(target_dev="sdb", target_bus="scsi", serial="data", scsi_unit=1),
             config.DiskConfig(target_dev="vda", target_bus="virtio", serial="v")]
    tags = config_drive.tags_of({"block_device_mapping": [
        {"mount_device": "/dev/sdb", "tag": "data"}, {"mount_device": "/dev/sda", "tag": None},
        {"mount_device": "/dev/vda", "tag": "fast"}]})
    assert tags == {"sdb": "data", "vda": "fast"}
    assert config_drive.devices(disks, tags) == [
        {"type": "disk", "bus": "scsi", "serial": "data", "address": "0:0:0:1",
         "tags": ["data"]},
        {"type": "disk", "bus": "virtio", "serial": "v", "address": "none", "tags": ["fast"]}]


@pytest.mark.parametrize(("machine", "bus"), [
    (None, "ide"), ("pc", "ide"), ("pc-i440fx-7.2", "ide"), ("q35", "sata"),
    ("pc-q35-7.2", "sata")])
def test_the_cdrom_bus_follows_the_machine_type(machine, bus):
    disk = ET.fromstring(config.config_drive_disk("/x/disk.config", machine).to_xml())
    assert (disk.get("device"), disk.get("type")) == ("cdrom", "file")
    assert disk.find("target").attrib == {"dev": "hda", "bus": bus}
    assert disk.find("source").get("file") == "/x/disk.config"
    assert disk.find("readonly") is not None
    assert disk.find("serial") is None and disk.find("address") is None


def test_the_machine_type_is_written_only_when_set():
    plain = ET.fromstring(config.DomainConfig(uuid="u", name="n").to_xml())
    assert plain.find("os/type").attrib == {}
    q35 = ET.fromstring(config.DomainConfig(uuid="u", name="n", machine="q35").to_xml())
    assert q35.find("os/type").attrib == {"machine": "q35"}


@pytest.mark.parametrize(("hostname", "domain", "wanted"), [
    ("web-1", "novalocal", "web-1.novalocal"), ("web-1", "", "web-1"),
    ("web.example.org", None, "web.example.org"), (None, "novalocal", None)])
def test_qualified_hostname(hostname, domain, wanted):
    assert configdrive.qualified(hostname, domain) == wanted
