"""FakeCinder follows the real Cinder's status walk and refusals."""

import os

import pytest

from tests.fixtures.cinder import FakeCinder
from volumesvc import exception
from volumesvc.volume.cinder import CinderAPI

CONNECTOR = {"host": "h1", "platform": "x86_64", "os_type": "linux", "multipath": False}


@pytest.fixture
def fake():
    return FakeCinder()


def _attach(fake, ctx, volume_id, server):
    att = fake.attachment_create(ctx, volume_id, server)
    fake.attachment_update(ctx, att["id"], CONNECTOR, mountpoint="/dev/sdb")
    fake.attachment_complete(ctx, att["id"])
    return att["id"]


def test_same_public_methods_as_cinderapi():
    public = {n for n in dir(CinderAPI) if not n.startswith("_") and n != "client"}
    assert public <= set(dir(FakeCinder))


def test_status_walk(fake, ctx):
    vol = fake.create(ctx, 1, "v", "d")
    vid = vol["id"]
    assert vol["status"] == "available"
    att = fake.attachment_create(ctx, vid, "s1")
    assert att["status"] == "reserved"
    assert fake.get(ctx, vid)["status"] == "reserved"
    info = fake.attachment_update(ctx, att["id"], CONNECTOR)
    assert info["attachment_id"] == att["id"] and info["serial"] == vid
    assert fake.get(ctx, vid)["status"] == "attaching"
    fake.attachment_complete(ctx, att["id"])
    vol = fake.get(ctx, vid)
    assert vol["status"] == "in-use"
    assert vol["attachments"][0]["server_id"] == "s1"
    assert vol["attachments"][0]["attachment_id"] == att["id"]
    fake.begin_detaching(ctx, vid)
    assert fake.get(ctx, vid)["status"] == "detaching"
    fake.roll_detaching(ctx, vid)
    assert fake.get(ctx, vid)["status"] == "in-use"
    fake.begin_detaching(ctx, vid)
    fake.attachment_delete(ctx, att["id"])
    vol = fake.get(ctx, vid)
    assert (vol["status"], vol["attachments"]) == ("available", [])


def test_non_multiattach_in_use_refused(fake, ctx):
    vid = fake.create(ctx, 1, "v", "d")["id"]
    _attach(fake, ctx, vid, "s1")
    with pytest.raises(exception.Invalid, match="not multiattach"):
        fake.attachment_create(ctx, vid, "s2")


def test_a_second_attachment_for_the_same_server_is_allowed(fake, ctx):
    """As Cinder 29's _attachment_reserve (shelve-offload relies on it)."""
    vid = fake.create(ctx, 1, "v", "d")["id"]
    first = _attach(fake, ctx, vid, "s1")
    second = fake.attachment_create(ctx, vid, "s1")
    assert fake.get(ctx, vid)["status"] == "in-use"   # left alone
    fake.attachment_delete(ctx, first)
    assert fake.get(ctx, vid)["status"] == "reserved"
    # ... and again while reserved; another server is still refused.
    third = fake.attachment_create(ctx, vid, "s1")
    with pytest.raises(exception.Invalid, match="current status is reserved"):
        fake.attachment_create(ctx, vid, "s2")
    fake.attachment_delete(ctx, second["id"])
    fake.attachment_delete(ctx, third["id"])
    assert fake.get(ctx, vid)["status"] == "available"


def test_no_new_reservation_while_attaching_even_for_the_same_server(fake, ctx):
    vid = fake.create(ctx, 1, "v", "d")["id"]
    att = fake.attachment_create(ctx, vid, "s1")
    fake.attachment_update(ctx, att["id"], CONNECTOR)
    with pytest.raises(exception.Invalid, match="current status is attaching"):
        fake.attachment_create(ctx, vid, "s1")


def test_complete_without_a_connector(fake, ctx):
    """Cinder 29 completes a connector-less attachment (attach to an offloaded server)."""
    vid = fake.create(ctx, 1, "v", "d")["id"]
    att = fake.attachment_create(ctx, vid, "s1")
    fake.attachment_complete(ctx, att["id"])
    vol = fake.get(ctx, vid)
    assert (vol["status"], vol["attach_status"]) == ("in-use", "attached")
    assert fake.attachment_get(ctx, att["id"])["connection_info"] == {}


def test_second_reservation_while_reserved_is_refused(fake, ctx):
    fake.create_volume_type("multi", {"multiattach": "<is> True"})
    vid = fake.create(ctx, 1, "v", "d", volume_type="multi")["id"]
    assert fake.get(ctx, vid)["multiattach"] is True
    fake.attachment_create(ctx, vid, "s1")
    with pytest.raises(exception.Invalid, match="available or in-use"):
        fake.attachment_create(ctx, vid, "s2")


def test_multiattach_two_servers(fake, ctx):
    fake.create_volume_type("multi", {"multiattach": "<is> True"})
    vid = fake.create(ctx, 1, "v", "d", volume_type="multi")["id"]
    a1 = _attach(fake, ctx, vid, "s1")
    a2 = fake.attachment_create(ctx, vid, "s2")["id"]
    assert fake.get(ctx, vid)["status"] == "reserved"
    fake.attachment_update(ctx, a2, CONNECTOR)
    fake.attachment_complete(ctx, a2)
    assert len(fake.get(ctx, vid)["attachments"]) == 2
    fake.attachment_delete(ctx, a1)
    assert fake.get(ctx, vid)["status"] == "in-use"
    assert [a["id"] for a in fake.attachment_get_all(ctx, volume_id=vid)] == [a2]
    fake.attachment_delete(ctx, a2)
    assert fake.get(ctx, vid)["status"] == "available"


def test_delete_of_unknown_attachment_only_warns(fake, ctx):
    fake.attachment_delete(ctx, "nope")
    with pytest.raises(exception.VolumeAttachmentNotFound):
        fake.attachment_get(ctx, "nope")


def test_cannot_delete_in_use_volume(fake, ctx):
    vid = fake.create(ctx, 1, "v", "d")["id"]
    _attach(fake, ctx, vid, "s1")
    with pytest.raises(exception.Invalid):
        fake.delete(ctx, vid)
    with pytest.raises(exception.VolumeNotFound):
        fake.get(ctx, "missing")


def test_extend_in_use_immediate_and_held(fake, ctx):
    vid = fake.create(ctx, 1, "v", "d")["id"]
    _attach(fake, ctx, vid, "s1")
    fake.extend(ctx, vid, 2)
    assert fake.get(ctx, vid)["size"] == 2
    with pytest.raises(exception.Invalid):
        fake.extend(ctx, vid, 2)
    fake.hold_extend = True
    fake.extend(ctx, vid, 3)
    assert (fake.get(ctx, vid)["status"], fake.get(ctx, vid)["size"]) == ("extending", 2)
    # Shown as Cinder 29 with the harness's extension shows it: a string in metadata.
    assert fake.get(ctx, vid)["metadata"]["extend_new_size"] == "3"
    fake.extend_volume_completion(ctx, vid, False)
    assert "extend_new_size" not in fake.get(ctx, vid)["metadata"]
    assert (fake.get(ctx, vid)["status"], fake.get(ctx, vid)["size"]) == ("in-use", 3)
    fake.extend(ctx, vid, 4)
    fake.extend_volume_completion(ctx, vid, True)
    assert (fake.get(ctx, vid)["status"], fake.get(ctx, vid)["size"]) == ("error_extending", 3)


def test_volume_dir_gives_local_connection_to_real_sparse_files(tmp_path, ctx):
    fake = FakeCinder(volume_dir=str(tmp_path))
    vid = fake.create(ctx, 1, "v", "d")["id"]
    att = fake.attachment_create(ctx, vid, "s1", connector=CONNECTOR)
    info = fake.attachment_get(ctx, att["id"])["connection_info"]
    assert info["driver_volume_type"] == "local"
    assert os.path.getsize(info["data"]["device_path"]) == 1024 ** 3
    fake.attachment_complete(ctx, att["id"])
    fake.extend(ctx, vid, 2)
    assert os.path.getsize(info["data"]["device_path"]) == 2 * 1024 ** 3


def test_types_snapshots_limits(fake, ctx):
    vtype = fake.create_volume_type("gold")
    assert fake.get_volume_type(ctx, vtype["id"])["name"] == "gold"
    assert fake.get_volume_type(ctx, "gold")["id"] == vtype["id"]
    with pytest.raises(exception.VolumeTypeNotFound):
        fake.get_volume_type(ctx, "nope")
    vid = fake.create(ctx, 2, "v", "d", volume_type="gold")["id"]
    snap = fake.create_snapshot_force(ctx, vid, "s")
    assert fake.get_snapshot(ctx, snap["id"])["volume_id"] == vid
    vol2 = fake.create(ctx, 2, "v2", "d", snapshot_id=snap["id"])
    assert vol2["snapshot_id"] == snap["id"]
    assert fake.get_absolute_limits(ctx)["totalGigabytesUsed"] == 4
    fake.delete_snapshot(ctx, snap["id"])
    with pytest.raises(exception.SnapshotNotFound):
        fake.get_snapshot(ctx, snap["id"])


def test_create_with_a_fixed_id_for_fixtures(fake, ctx):
    vtype = fake.create_volume_type("fast", type_id="t-fast")
    vol = fake.create(ctx, 1, "v", None, volume_type="fast", volume_id="v-fixed")
    snap = fake.create_snapshot_force(ctx, "v-fixed", snapshot_id="s-fixed")
    assert (vtype["id"], vol["id"], snap["id"]) == ("t-fast", "v-fixed", "s-fixed")
    assert fake.get(ctx, "v-fixed")["volume_type_id"] == "t-fast"
