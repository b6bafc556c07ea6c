"""python-openstackclient (through openstacksdk) and python-novaclient, unmodified,
against the all-in-one: boot from volume with a volume type, reboot, snapshot, delete.

Everything is real: the clients run as shipped, the aio's Cinder holds the
volumes as sparse files, its Glance the images, and QEMU runs the domains.
"""

import contextlib
import itertools
import json
import os
import uuid
import xml.etree.ElementTree as ET

from tests.integration.clients.helpers import (
    attached_volume_ids,
    delete_server_quietly,
    delete_volume_quietly,
    glance_delete,
    glance_image,
    nova_client,
    sdk_wait_active,
    server_attr,
    unique,
    wait_server,
    wait_server_gone,
    wait_snapshot_gone,
    wait_volume,
    wait_volume_gone,
)

GIB = 1 << 30


def _assert_volume(cinder, volume_id, *, type_name, size=1, status="in-use", server_id=None):
    volume = cinder.volumes.get(volume_id)
    assert (volume.volume_type, volume.size, volume.status) == (type_name, size, status), \
        volume.to_dict()
    if server_id:
        assert [a["server_id"] for a in volume.attachments] == [server_id], volume.attachments
    return volume


def test_osc_and_sdk_blank_volume_of_a_type_create_list_show_reboot_delete(
        aio, osc, sdk, nova, cinder, volume_type):
    """OSC expresses volume_type in --block-device from 2.67; the sdk reads the same server."""
    name = unique("osc-blank")
    server_id = None
    try:
        created = osc(
            "server", "create", "--flavor", "42", "--nic", "none", "--wait",
            "--block-device", "source_type=blank,destination_type=volume,volume_size=1,"
                              f"volume_type={volume_type.name},boot_index=0,"
                              "delete_on_termination=true",
            name)
        server_id = created["id"]
        assert created["status"] == "ACTIVE", created
        assert created["image"] == "N/A (booted from volume)", created
        [attached] = created["volumes_attached"]
        volume_id = attached["id"]
        assert attached["delete_on_termination"] is True

        listed = {s["ID"]: s for s in osc("server", "list")}
        assert listed[server_id]["Name"] == name and listed[server_id]["Status"] == "ACTIVE"
        shown = osc("server", "show", server_id)
        assert (shown["id"], shown["status"], shown["OS-EXT-STS:vm_state"]) == \
            (server_id, "ACTIVE", "active")
        assert [v["id"] for v in shown["volumes_attached"]] == [volume_id]

        server = sdk.compute.get_server(server_id)
        assert (server.name, server.status, server.flavor.original_name) == \
            (name, "ACTIVE", "m1.nano")
        assert [v.id for v in server.attached_volumes] == [volume_id]
        assert server_id in {s.id for s in sdk.compute.servers()}

        _assert_volume(cinder, volume_id, type_name=volume_type.name, server_id=server_id)
        assert cinder.volumes.get(volume_id).bootable == "false"

        for kind in ("--soft", "--hard"):
            osc("server", "reboot", kind, "--wait", server_id, json_out=False)
            server = sdk_wait_active(sdk, sdk.compute.get_server(server_id), aio)
            assert server.task_state is None, (kind, server.task_state)
            _assert_volume(cinder, volume_id, type_name=volume_type.name, server_id=server_id)

        osc("server", "delete", "--wait", server_id, json_out=False)
        assert server_id not in {s.id for s in sdk.compute.servers()}
        server_id = None
        wait_volume_gone(cinder, volume_id)
    finally:
        if server_id:
            delete_server_quietly(nova, server_id)


def test_novaclient_image_to_volume_of_a_type_as_a_project_member(aio, cinder, volume_type):
    """A non-admin project (hex id, so Cinder routes it in URLs) boots image→volume with a type."""
    project = uuid.uuid4().hex
    nova = nova_client(aio, token=f"member:{project}")
    bdm = [{"source_type": "image", "uuid": aio.image_id, "destination_type": "volume",
            "volume_size": 1, "volume_type": volume_type.name, "boot_index": 0,
            "delete_on_termination": True}]
    name = unique("nova-image")
    server = nova.servers.create(name, image=None, flavor="42",
                                 block_device_mapping_v2=bdm, nics="none")
    try:
        server = wait_server(nova, server.id, aio=aio)
        [volume_id] = attached_volume_ids(server)
        assert server.image == ""  # volume-backed
        assert [s.id for s in nova.servers.list()] == [server.id]
        assert nova.servers.get(server.id).name == name

        volume = _assert_volume(cinder, volume_id, type_name=volume_type.name,
                                server_id=server.id)
        assert volume.bootable == "true"
        assert getattr(volume, "os-vol-tenant-attr:tenant_id") == project
        assert volume.volume_image_metadata["image_id"] == aio.image_id

        for kind in ("SOFT", "HARD"):
            nova.servers.reboot(server.id, reboot_type=kind)
            assert nova.servers.get(server.id).status in ("REBOOT", "HARD_REBOOT", "ACTIVE")
            wait_server(nova, server.id, aio=aio)
            _assert_volume(cinder, volume_id, type_name=volume_type.name, server_id=server.id)

        nova.servers.delete(server.id)
        wait_server_gone(nova, server.id)
        wait_volume_gone(cinder, volume_id)
    finally:
        delete_server_quietly(nova, server.id)


def test_sdk_boot_from_precreated_bootable_volume_keeps_it(aio, sdk, nova, cinder):
    """source_type volume, delete_on_termination false: the volume is available again after."""
    volume = cinder.volumes.create(1, name=unique("precreated"), imageRef=aio.image_id)
    server = None
    try:
        volume = wait_volume(cinder, volume.id, "available")
        assert volume.bootable == "true"
        server = sdk.compute.create_server(
            name=unique("sdk-volume"), flavor_id="42", networks="none",
            block_device_mapping=[{"uuid": volume.id, "source_type": "volume",
                                   "destination_type": "volume", "boot_index": 0,
                                   "delete_on_termination": False}])
        server = sdk_wait_active(sdk, server, aio)
        assert [(v.id, v.delete_on_termination) for v in server.attached_volumes] == \
            [(volume.id, False)]
        attached = wait_volume(cinder, volume.id, "in-use")
        assert [a["server_id"] for a in attached.attachments] == [server.id]

        sdk.compute.delete_server(server)
        sdk.compute.wait_for_delete(server, wait=120)
        server = None
        after = wait_volume(cinder, volume.id, "available")
        assert after.attachments == [] and after.bootable == "true"
        assert cinder.attachments.list(search_opts={"volume_id": volume.id}) == []
    finally:
        if server is not None:
            delete_server_quietly(nova, server.id)
        delete_volume_quietly(cinder, volume.id)


def test_create_image_records_volume_type_and_boot_from_it_gets_the_type(
        aio, sdk, nova, cinder, volume_type):
    """createImage (2.45+: image_id in the body) → Glance BDM property → boot from the image."""
    source = sdk.compute.create_server(
        name=unique("snap-source"), flavor_id="42", networks="none",
        block_device_mapping=[{"source_type": "blank", "destination_type": "volume",
                               "volume_size": 1, "volume_type": volume_type.name,
                               "boot_index": 0, "delete_on_termination": True}])
    image_id = child_id = None
    snapshot_ids = []
    try:
        source = sdk_wait_active(sdk, source, aio)
        [source_volume] = [v.id for v in source.attached_volumes]

        image_id = nova.servers.create_image(source.id, unique("snap"))
        assert isinstance(image_id, str) and len(image_id) == 36, image_id
        image = glance_image(aio, image_id)
        assert image["status"] == "active", image
        assert image["bdm_v2"] == "True"
        assert image["instance_uuid"] == source.id
        mappings = json.loads(image["block_device_mapping"])
        volume_entries = [m for m in mappings if m["destination_type"] == "volume"]
        assert len(volume_entries) == 1, mappings
        for entry in volume_entries:
            snapshot_ids.append(entry["snapshot_id"])
            assert (entry["source_type"], entry["volume_type"], entry["volume_size"],
                    entry["boot_index"], entry["volume_id"]) == \
                ("snapshot", volume_type.name, 1, 0, None), entry
            snapshot = cinder.volume_snapshots.get(entry["snapshot_id"])
            assert snapshot.volume_id == source_volume

        child = nova.servers.create(unique("from-snap"), image=image_id, flavor="42",
                                    nics="none")
        child_id = child.id
        child = wait_server(nova, child_id, aio=aio)
        [child_volume] = attached_volume_ids(child)
        assert child_volume != source_volume
        volume = _assert_volume(cinder, child_volume, type_name=volume_type.name,
                                server_id=child_id)
        assert volume.snapshot_id == snapshot_ids[0]

        # Order matters: Cinder keeps a volume with snapshots.
        nova.servers.delete(child_id)
        wait_server_gone(nova, child_id)
        child_id = None
        wait_volume_gone(cinder, child_volume)
        for snapshot_id in snapshot_ids:
            cinder.volume_snapshots.delete(snapshot_id)
            wait_snapshot_gone(cinder, snapshot_id)
        snapshot_ids = []
        nova.servers.delete(source.id)
        wait_server_gone(nova, source.id)
        wait_volume_gone(cinder, source_volume)
    finally:
        if child_id:
            delete_server_quietly(nova, child_id)
        for snapshot_id in snapshot_ids:
            try:
                cinder.volume_snapshots.delete(snapshot_id)
                wait_snapshot_gone(cinder, snapshot_id)
            except Exception:  # noqa: BLE001,S110 - best-effort cleanup
                pass
        delete_server_quietly(nova, source.id)
        if image_id:
            glance_delete(aio, image_id)


def _qemu_disks(aio, instance_name):
    """Disks of the running domain, read from libvirt's status XML and QEMU's command line.

    Returns (xml disks [(source file, serial)], cmdline disks [(file, serial)]).
    """
    run_dir = os.path.join(aio.state_dir, "libvirt", "run", "qemu")
    with open(os.path.join(run_dir, f"{instance_name}.pid")) as f:
        pid = int(f.read().strip())
    root = ET.parse(os.path.join(run_dir, f"{instance_name}.xml")).getroot()
    domain = root if root.tag == "domain" else root.find("domain")
    assert domain.findtext("name") == instance_name
    xml_disks = [(d.find("source").get("file"), d.findtext("serial"))
                 for d in domain.find("devices").findall("disk") if d.get("device") == "disk"]

    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().decode().split("\0")
    assert f"guest={instance_name}" in argv[argv.index("-name") + 1]
    nodes, devices = {}, []
    for flag, value in itertools.pairwise(argv):
        if flag == "-blockdev":
            node = json.loads(value)
            nodes[node["node-name"]] = node
        elif flag == "-device" and value.startswith("{"):
            device = json.loads(value)
            if "drive" in device:
                devices.append(device)
    cmd_disks = []
    for device in devices:
        node = nodes[device["drive"]]
        while node["driver"] != "file":  # format node → its storage node
            node = nodes[node["file"]]
        cmd_disks.append((node["filename"], device.get("serial")))
    return xml_disks, cmd_disks


def test_domain_has_one_disk_per_volume_backed_by_the_volume_file(
        aio, nova, cinder, volume_type):
    """Two volume BDMs → two disks of the running QEMU, file = the volume, serial = its id."""
    bdm = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "volume_type": volume_type.name, "boot_index": 0, "delete_on_termination": True},
           {"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "boot_index": -1, "delete_on_termination": True}]
    server = nova.servers.create(unique("two-disks"), image=None, flavor="42",
                                 block_device_mapping_v2=bdm, nics="none")
    try:
        server = wait_server(nova, server.id, aio=aio)
        volume_ids = attached_volume_ids(server)
        assert len(volume_ids) == 2
        instance_name = server_attr(server, "OS-EXT-SRV-ATTR:instance_name")
        assert instance_name

        volumes_dir = os.path.join(aio.state_dir, "cinder", "volumes")
        expected = sorted((os.path.join(volumes_dir, f"volume-{v}"), v) for v in volume_ids)
        for path, _ in expected:
            assert os.stat(path).st_size == GIB, path

        xml_disks, cmd_disks = _qemu_disks(aio, instance_name)
        assert sorted(xml_disks) == expected, xml_disks
        assert sorted(cmd_disks) == expected, cmd_disks
        types = sorted(cinder.volumes.get(v).volume_type for v in volume_ids)
        assert types == sorted([volume_type.name, "__DEFAULT__"]), types

        nova.servers.reboot(server.id, reboot_type="HARD")
        wait_server(nova, server.id, aio=aio)
        xml_disks, cmd_disks = _qemu_disks(aio, instance_name)
        assert sorted(xml_disks) == expected and sorted(cmd_disks) == expected

        nova.servers.delete(server.id)
        wait_server_gone(nova, server.id)
        for volume_id in volume_ids:
            wait_volume_gone(cinder, volume_id)
        assert not os.path.exists(os.path.join(aio.state_dir, "libvirt", "run", "qemu",
                                               f"{instance_name}.pid"))
    finally:
        delete_server_quietly(nova, server.id)


def test_delete_after_create_image_deletes_the_server_and_keeps_the_snapshotted_volume(
        aio, nova, cinder, volume_type):
    """The usual journey: snapshot a volume-backed server, then delete the server.

    Regression: the delete failed and left the server in ERROR.
    """
    bdm = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "volume_type": volume_type.name, "boot_index": 0, "delete_on_termination": True}]
    server = nova.servers.create(unique("snap-then-delete"), image=None, flavor="42",
                                 block_device_mapping_v2=bdm, nics="none")
    image_id, snapshot_ids, volume_ids = None, [], []
    try:
        server = wait_server(nova, server.id, aio=aio)
        volume_ids = attached_volume_ids(server)
        image_id = nova.servers.create_image(server.id, unique("snap"))
        snapshot_ids = [m["snapshot_id"] for m in json.loads(
            glance_image(aio, image_id)["block_device_mapping"]) if m.get("snapshot_id")]
        assert len(snapshot_ids) == 1

        nova.servers.delete(server.id)
        wait_server_gone(nova, server.id, timeout=60)
        # Cinder refuses to delete a volume with snapshots: it stays, detached.
        assert wait_volume(cinder, volume_ids[0], "available").attachments == []
    finally:
        for snapshot_id in snapshot_ids:
            with contextlib.suppress(Exception):
                cinder.volume_snapshots.delete(snapshot_id)
                wait_snapshot_gone(cinder, snapshot_id)
        delete_server_quietly(nova, server.id)
        for volume_id in volume_ids:
            delete_volume_quietly(cinder, volume_id)
        if image_id:
            glance_delete(aio, image_id)
