"""Config drives end to end: what a guest would read from its ``config-2`` CD-ROM.

The compute runs the libvirt driver on the fake libvirt, so each drive is a
real ISO 9660 image in the server's directory; these tests read it back
(label, files) and look at the domain's CD-ROM, through boot, a tagged
attachment, stop/start, reboots, shelve/unshelve, rebuild and delete.
"""

import base64
import json
import os
import xml.etree.ElementTree as ET

import pytest

from tests.functional.stack import BLANK_ROOT, Stack
from volumesvc.objects import block_device as bdm_obj
from volumesvc.virt import configdrive

TOKEN = "u1:p1"
HOST = "fn-compute"
SCRIPT = b"#!/bin/sh\necho hello from the config drive\n"


def _boot(stack, version="2.67", status=202, **fields):
    server = {"name": "guest one", "flavorRef": "42", "networks": "none",
              "block_device_mapping_v2": BLANK_ROOT, **fields}
    return stack.api("POST", "/servers", {"server": server}, version=version, token=TOKEN,
                     status=status)[1]


def _driver(stack):
    return stack.computes[HOST].manager.driver


def _drive(stack, uuid):
    """(label, files) of the server's config drive ISO as it is on disk now."""
    iso_path, _files = _driver(stack).config_drives[uuid]
    return configdrive.read_iso(iso_path)


def _meta(files, version="latest"):
    return json.loads(files[f"openstack/{version}/meta_data.json"])


def _cdroms(stack, uuid):
    xml = _driver(stack).get_domain_xml({"uuid": uuid})
    return [disk for disk in ET.fromstring(xml).iter("disk") if disk.get("device") == "cdrom"]


def _action(stack, uuid, body, version="2.1"):
    stack.api("POST", f"/servers/{uuid}/action", body, version=version, token=TOKEN,
              status=202)


def _bdm(stack, uuid, volume_id):
    return next(b for b in bdm_obj.list_by_instance(stack.db, stack.admin_context(), uuid)
                if b.volume_id == volume_id)


@pytest.fixture
def tagged_server(stack):
    """An ACTIVE server with a config drive, user_data, a key pair and tagged volumes."""
    key = stack.api("POST", "/os-keypairs", {"keypair": {"name": "k1"}}, version="2.10",
                    token=TOKEN, status=201)[1]["keypair"]
    data = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    uuid = _boot(stack, config_drive=True, user_data=base64.b64encode(SCRIPT).decode(),
                 key_name="k1", metadata={"role": "db"}, availability_zone="nova",
                 block_device_mapping_v2=[
                     dict(BLANK_ROOT[0], tag="root"),
                     {"source_type": "volume", "destination_type": "volume",
                      "uuid": data, "tag": "data-disk"}])["server"]["id"]
    stack.wait_for_server_status(uuid, "ACTIVE")
    return uuid, data, key


def test_boot_with_config_drive_writes_the_config_2_layout(stack, tagged_server):
    uuid, data, key = tagged_server
    label, files = _drive(stack, uuid)
    assert label == "config-2"
    assert files["openstack/latest/user_data"] == SCRIPT
    meta = _meta(files)
    root = _bdm(stack, uuid, next(b.volume_id for b in bdm_obj.list_by_instance(
        stack.db, stack.admin_context(), uuid) if b.boot_index == 0))
    assert {k: meta[k] for k in ("uuid", "name", "hostname", "launch_index",
                                 "availability_zone", "project_id", "meta")} == {
        "uuid": uuid, "name": "guest one", "hostname": "guest-one.novalocal",
        "launch_index": 0,
        "availability_zone": "nova", "project_id": "p1", "meta": {"role": "db"}}
    assert meta["public_keys"] == {"k1": key["public_key"]}
    assert meta["keys"] == [{"name": "k1", "type": "ssh", "data": key["public_key"]}]
    assert len(base64.b64decode(meta["random_seed"])) == 512
    assert sorted(meta["devices"], key=lambda d: d["tags"]) == [
        {"type": "disk", "bus": "scsi", "serial": data, "address": "0:0:0:1",
         "tags": ["data-disk"]},
        {"type": "disk", "bus": "scsi", "serial": root.volume_id, "address": "0:0:0:0",
         "tags": ["root"]}]
    # Each dated version holds what that version defines, as Nova writes them.
    folsom = _meta(files, "2012-08-10")
    assert folsom["uuid"] == uuid and folsom["public_keys"] == {"k1": key["public_key"]}
    assert not {"devices", "project_id", "random_seed"} & set(folsom)
    assert _meta(files, "2015-10-15")["project_id"] == "p1"
    assert "devices" not in _meta(files, "2015-10-15")
    assert len(_meta(files, "2016-06-30")["devices"]) == 2
    assert files["openstack/2012-08-10/user_data"] == SCRIPT
    assert json.loads(files["openstack/latest/network_data.json"]) == {
        "links": [], "networks": [], "services": []}
    # What the fake driver recorded is what the ISO holds (random_seed aside).
    assert set(_driver(stack).config_drives[uuid][1]) == set(files)


def test_the_drive_is_a_read_only_cdrom_of_the_domain(stack, tagged_server):
    uuid = tagged_server[0]
    iso_path = _driver(stack).config_drives[uuid][0]
    assert iso_path == os.path.join(stack.conf.state_path, "instances", uuid, "disk.config")
    (cdrom,) = _cdroms(stack, uuid)
    assert cdrom.find("source").get("file") == iso_path
    assert (cdrom.find("target").get("dev"), cdrom.find("target").get("bus")) == ("hda", "ide")
    assert cdrom.find("readonly") is not None
    server = stack.server(uuid)
    assert server["config_drive"] == "True"


@pytest.mark.parametrize("version", ["2.1", "2.75", "2.96"])
def test_config_drive_shows_as_nova_at_each_version(stack, version):
    with_drive = _boot(stack, config_drive="true")["server"]["id"]
    without = _boot(stack, config_drive=False)["server"]["id"]
    unset = _boot(stack)["server"]["id"]
    for uuid in (with_drive, without, unset):
        stack.wait_for_server_status(uuid, "ACTIVE")
    assert stack.server(with_drive, version)["config_drive"] == "True"
    assert stack.server(without, version)["config_drive"] == ""
    assert stack.server(unset, version)["config_drive"] == ""
    assert _cdroms(stack, without) == [] and without not in _driver(stack).config_drives


@pytest.mark.parametrize("value", ["", "maybe", 1, None])
def test_config_drive_that_is_not_a_boolean_is_a_400(stack, value):
    body = _boot(stack, status=400, config_drive=value)
    assert "config_drive" in body["badRequest"]["message"]


def test_a_tagged_attachment_is_listed_once_the_domain_is_defined_again(stack, tagged_server):
    uuid = tagged_server[0]
    extra = stack.cinder.create(stack.context(), 1, "extra", "")["id"]
    stack.attach_volume(uuid, extra, version="2.49", status=200, tag="logs")
    stack.wait(lambda: stack.cinder.get(None, extra)["status"] == "in-use", what="in-use")
    # The running guest's drive is the one it booted with ...
    assert "logs" not in [d["tags"][0] for d in _meta(_drive(stack, uuid)[1])["devices"]]
    _action(stack, uuid, {"os-stop": None})
    stack.wait_for_server_status(uuid, "SHUTOFF")
    _action(stack, uuid, {"os-start": None})
    stack.wait_for_server_status(uuid, "ACTIVE")
    # ... the started one reads the attachment's tag, serial and address.
    device_name = _bdm(stack, uuid, extra).device_name
    unit = ord(device_name[-1]) - ord("a")
    assert {"type": "disk", "bus": "scsi", "serial": extra, "address": f"0:0:0:{unit}",
            "tags": ["logs"]} in _meta(_drive(stack, uuid)[1])["devices"]


def test_the_drive_is_kept_across_reboots_and_shelve_and_removed_with_the_server(
        stack, tagged_server):
    uuid = tagged_server[0]
    iso_path = _driver(stack).config_drives[uuid][0]
    _action(stack, uuid, {"reboot": {"type": "SOFT"}})
    stack.wait_for_server_status(uuid, "ACTIVE")
    _action(stack, uuid, {"reboot": {"type": "HARD"}})
    stack.wait_for_server_status(uuid, "ACTIVE")
    assert _drive(stack, uuid)[1]["openstack/latest/user_data"] == SCRIPT
    assert len(_cdroms(stack, uuid)) == 1

    _action(stack, uuid, {"shelve": None})
    stack.wait_for_server_status(uuid, "SHELVED_OFFLOADED")
    assert not os.path.exists(iso_path)  # the offload removed the server's directory
    _action(stack, uuid, {"unshelve": None})
    stack.wait_for_server_status(uuid, "ACTIVE")
    label, files = configdrive.read_iso(iso_path)
    assert label == "config-2" and files["openstack/latest/user_data"] == SCRIPT
    assert len(_meta(files)["devices"]) == 2
    assert len(_cdroms(stack, uuid)) == 1

    stack.api("DELETE", f"/servers/{uuid}", token=TOKEN, status=204)
    stack.wait_for_server_gone(uuid)
    assert not os.path.exists(os.path.dirname(iso_path))


def test_rebuild_writes_the_new_user_data_and_a_null_removes_it(stack):
    image = stack.glance.create(stack.context(), name="img", owner="p1", data=b"x")["id"]
    volume = stack.cinder.create(stack.context(), 1, "root", "", image_id=image)["id"]
    uuid = _boot(stack, config_drive=True, user_data=base64.b64encode(SCRIPT).decode(),
                 block_device_mapping_v2=[{"source_type": "volume", "uuid": volume,
                                           "destination_type": "volume", "boot_index": 0,
                                           "tag": "boot"}])["server"]["id"]
    stack.wait_for_server_status(uuid, "ACTIVE")
    new = b"#!/bin/sh\necho rebuilt\n"
    _action(stack, uuid, {"rebuild": {"imageRef": image, "name": "renamed",
                                      "user_data": base64.b64encode(new).decode()}},
            version="2.57")
    stack.wait_for_server_status(uuid, "ACTIVE")
    files = _drive(stack, uuid)[1]
    assert files["openstack/latest/user_data"] == new
    assert _meta(files)["name"] == "renamed"
    assert [d["tags"] for d in _meta(files)["devices"]] == [["boot"]]
    _action(stack, uuid, {"rebuild": {"imageRef": image, "user_data": None}}, version="2.57")
    stack.wait_for_server_status(uuid, "ACTIVE")
    files = _drive(stack, uuid)[1]
    assert "openstack/latest/user_data" not in files
    assert _meta(files)["uuid"] == uuid


@pytest.fixture
def forced(tmp_path):
    stack = Stack(tmp_path, hosts=())
    stack.add_compute(HOST, {(None, "force_config_drive"): True,
                             ("api", "dhcp_domain"): "example.org"})
    yield stack
    stack.stop()


def test_force_config_drive_gives_every_new_server_a_drive(forced):
    uuid = _boot(forced)["server"]["id"]
    forced.wait_for_server_status(uuid, "ACTIVE")
    assert forced.server(uuid)["config_drive"] == "True"
    label, files = _drive(forced, uuid)
    assert label == "config-2" and _meta(files)["uuid"] == uuid
    assert _meta(files)["hostname"] == "guest-one.example.org"
    assert "openstack/latest/user_data" not in files  # booted without user_data
    assert len(_cdroms(forced, uuid)) == 1


def test_an_image_that_makes_the_drive_mandatory_gives_one(stack):
    image = stack.glance.create(stack.context(), name="needs-drive", owner="p1",
                                properties={"img_config_drive": "mandatory"},
                                data=b"\0" * 4096)["id"]
    plain = stack.glance.create(stack.context(), name="plain", owner="p1",
                                data=b"\0" * 4096)["id"]
    needs = _boot(stack, imageRef=image, block_device_mapping_v2=[])["server"]["id"]
    other = _boot(stack, imageRef=plain, block_device_mapping_v2=[])["server"]["id"]
    for uuid in (needs, other):
        stack.wait_for_server_status(uuid, "ACTIVE")
    assert stack.server(needs)["config_drive"] == "True"
    assert _drive(stack, needs)[0] == "config-2" and len(_cdroms(stack, needs)) == 1
    assert stack.server(other)["config_drive"] == ""
    assert _cdroms(stack, other) == []
