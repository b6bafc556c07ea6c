"""CinderAPI against a real Cinder 29 with the file-backed test driver."""

import os
import uuid

import pytest

from tests.integration.fixtures_openstack import wait_volume_status
from volumesvc import exception

pytestmark = pytest.mark.integration

GiB = 1024 ** 3
CONNECTOR = {"host": "it-host", "ip": "127.0.0.1", "platform": "x86_64",
             "os_type": "linux", "multipath": False, "initiator": "iqn.1993-08.org.test:it"}


@pytest.fixture(scope="module")
def multiattach_type(cinder_api):
    admin = cinder_api.client(None, "3.0")
    # A context-less client talks as admin:admin on the project-less URL.
    vtype = admin.volume_types.create(f"it-multi-{uuid.uuid4().hex[:6]}")
    vtype.set_keys({"multiattach": "<is> True"})
    return vtype.to_dict()


@pytest.fixture
def volume(cinder_api, cinder_ctx, multiattach_type):
    created = cinder_api.create(cinder_ctx, 1, "it-vol", "integration",
                                volume_type=multiattach_type["name"])
    yield wait_volume_status(cinder_api, cinder_ctx, created["id"], "available")
    for att in cinder_api.attachment_get_all(cinder_ctx, volume_id=created["id"]):
        cinder_api.attachment_delete(cinder_ctx, att["id"])
    cinder_api.delete(cinder_ctx, created["id"])


def _attach(api, ctx, volume_id, server):
    attachment = api.attachment_create(ctx, volume_id, server)
    assert api.get(ctx, volume_id)["status"] == "reserved"
    info = api.attachment_update(ctx, attachment["id"], CONNECTOR, mountpoint="/dev/sdb")
    api.attachment_complete(ctx, attachment["id"])
    return attachment["id"], info


def test_volume_type_by_name_and_id(cinder_api, cinder_ctx, multiattach_type):
    by_name = cinder_api.get_volume_type(cinder_ctx, multiattach_type["name"])
    assert by_name["id"] == multiattach_type["id"]
    assert by_name["extra_specs"] == {"multiattach": "<is> True"}
    assert cinder_api.get_volume_type(cinder_ctx, multiattach_type["id"])["name"] == \
        multiattach_type["name"]
    with pytest.raises(exception.VolumeTypeNotFound):
        cinder_api.get_volume_type(cinder_ctx, "no-such-type")


def test_attach_gives_a_local_file_and_detach_frees_it(cinder_api, cinder_ctx, volume):
    assert volume["multiattach"] is True
    server = str(uuid.uuid4())
    attachment_id, info = _attach(cinder_api, cinder_ctx, volume["id"], server)

    assert info["driver_volume_type"] == "local"
    assert info["attachment_id"] == attachment_id
    path = info["data"]["device_path"]
    assert os.path.isfile(path)
    assert os.path.getsize(path) == volume["size"] * GiB
    assert os.path.basename(path) == f"volume-{volume['id']}"

    in_use = cinder_api.get(cinder_ctx, volume["id"])
    assert in_use["status"] == "in-use"
    assert [(a["server_id"], a["attachment_id"]) for a in in_use["attachments"]] == \
        [(server, attachment_id)]
    assert [a["id"] for a in cinder_api.attachment_get_all(cinder_ctx, instance_id=server)] \
        == [attachment_id]
    assert cinder_api.attachment_get(cinder_ctx, attachment_id)["status"] == "attached"

    cinder_api.begin_detaching(cinder_ctx, volume["id"])
    assert cinder_api.get(cinder_ctx, volume["id"])["status"] == "detaching"
    # Deleting a connected attachment needs the service identity.
    cinder_api.attachment_delete(cinder_ctx, attachment_id)
    wait_volume_status(cinder_api, cinder_ctx, volume["id"], "available")
    with pytest.raises(exception.VolumeAttachmentNotFound):
        cinder_api.attachment_get(cinder_ctx, attachment_id)
    cinder_api.attachment_delete(cinder_ctx, attachment_id)  # 404 only warns


def test_second_reservation_while_reserved_is_refused(cinder_api, cinder_ctx, volume):
    cinder_api.attachment_create(cinder_ctx, volume["id"], str(uuid.uuid4()))
    with pytest.raises(exception.Invalid, match="reserve"):
        cinder_api.attachment_create(cinder_ctx, volume["id"], str(uuid.uuid4()))


def test_extend_in_use_volume_grows_the_file(cinder_api, cinder_ctx, volume):
    _, info = _attach(cinder_api, cinder_ctx, volume["id"], str(uuid.uuid4()))
    cinder_api.extend(cinder_ctx, volume["id"], 2)
    wait_volume_status(cinder_api, cinder_ctx, volume["id"], "in-use", size=2)
    assert os.path.getsize(info["data"]["device_path"]) == 2 * GiB
    with pytest.raises(exception.Invalid, match="greater than current size"):
        cinder_api.extend(cinder_ctx, volume["id"], 1)


def test_snapshot_of_in_use_volume_and_volume_from_it(cinder_api, cinder_ctx, volume):
    _attach(cinder_api, cinder_ctx, volume["id"], str(uuid.uuid4()))
    limits = cinder_api.get_absolute_limits(cinder_ctx)
    assert limits["totalVolumesUsed"] >= 1
    snap = cinder_api.create_snapshot_force(cinder_ctx, volume["id"], name="it-snap")
    for _ in range(100):
        if cinder_api.get_snapshot(cinder_ctx, snap["id"])["status"] == "available":
            break
        __import__("time").sleep(0.2)
    clone = cinder_api.create(cinder_ctx, 1, "it-clone", None, snapshot_id=snap["id"])
    wait_volume_status(cinder_api, cinder_ctx, clone["id"], "available")
    cinder_api.delete(cinder_ctx, clone["id"])
    cinder_api.delete_snapshot(cinder_ctx, snap["id"])
    # The delete is asynchronous; Cinder refuses to delete (the fixture's
    # teardown) a volume that still has a snapshot, deleting or not.
    for _ in range(150):
        try:
            cinder_api.get_snapshot(cinder_ctx, snap["id"])
        except exception.SnapshotNotFound:
            break
        __import__("time").sleep(0.2)
    else:
        pytest.fail(f"snapshot {snap['id']} was not deleted in 30 s")


def test_not_found_translation(cinder_api, cinder_ctx):
    missing = str(uuid.uuid4())
    with pytest.raises(exception.VolumeNotFound):
        cinder_api.get(cinder_ctx, missing)
    with pytest.raises(exception.SnapshotNotFound):
        cinder_api.get_snapshot(cinder_ctx, missing)


def _upload_image(glance_url, data):
    """Create an active raw image through Glance's v2 REST API; return its id."""
    import json
    import urllib.request

    body = json.dumps({"name": "it-image", "disk_format": "raw", "container_format": "bare",
                       "visibility": "public", "owner": "it"}).encode()
    request = urllib.request.Request(f"{glance_url}/v2/images", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        image_id = json.loads(response.read())["id"]
    request = urllib.request.Request(f"{glance_url}/v2/images/{image_id}/file", data=data,
                                     method="PUT",
                                     headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(request, timeout=30):
        pass
    return image_id


def test_volume_from_image_holds_the_image_bytes(cinder_api, cinder_ctx, glance_harness):
    payload = b"volumesvc-boot-sector" + b"\0" * (1024 * 1024 - 21)
    image_id = _upload_image(glance_harness.url, payload)
    created = cinder_api.create(cinder_ctx, 1, "it-from-image", None, image_id=image_id)
    volume = wait_volume_status(cinder_api, cinder_ctx, created["id"], "available", timeout=120)
    assert volume["bootable"] == "true"
    assert volume["volume_image_metadata"]["image_id"] == image_id
    attachment_id, info = _attach(cinder_api, cinder_ctx, volume["id"], str(uuid.uuid4()))
    with open(info["data"]["device_path"], "rb") as f:
        assert f.read(len(payload)) == payload
    assert os.path.getsize(info["data"]["device_path"]) == GiB
    cinder_api.attachment_delete(cinder_ctx, attachment_id)
    wait_volume_status(cinder_api, cinder_ctx, volume["id"], "available")
    cinder_api.delete(cinder_ctx, volume["id"])
