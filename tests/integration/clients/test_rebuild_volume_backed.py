"""Rebuild of a volume-backed server onto another image against the all-in-one.

Real Cinder 29 (file backend) reimages the root volume with ``os-reimage``
and posts ``volume-reimaged`` to volumesvc; QEMU runs the domain before and
after. The new image is a raw image of a known byte pattern uploaded to the
aio's Glance, so the root volume's file must start with exactly those bytes
afterwards.
"""

import hashlib

from tests.integration.clients.helpers import (
    attached_volume_ids,
    compute_http,
    delete_server_quietly,
    domain_disks,
    glance_delete,
    glance_upload_raw,
    unique,
    wait_server,
    wait_volume,
)

PATTERN = (b"volumesvc-rebuild-2.93 " * 45590)[:1 << 20]  # 1 MiB raw image


def _sha256_head(path, size):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read(size)).hexdigest()


def test_rebuild_at_2_93_reimages_the_root_volume_and_2_92_refuses(aio, nova, cinder):
    image_id = glance_upload_raw(aio, PATTERN, "rebuild-raw")
    bdm = [{"source_type": "image", "uuid": aio.image_id, "destination_type": "volume",
            "volume_size": 1, "boot_index": 0, "delete_on_termination": True}]
    server = nova.servers.create(unique("rebuild"), image=None, flavor="42",
                                 block_device_mapping_v2=bdm, nics="none")
    try:
        server = wait_server(nova, server.id, aio=aio)
        [root_id] = attached_volume_ids(server)
        path = f"/servers/{server.id}/action"
        body = {"rebuild": {"imageRef": image_id}}

        status, fault, _ = compute_http(aio, "POST", path, body, version="2.92")
        assert status == 400, fault
        assert "Unable to rebuild with a different image" in fault["badRequest"]["message"]

        status, answer, _ = compute_http(aio, "POST", path, body, version="2.93")
        assert status == 202, answer
        assert answer["server"]["status"] == "REBUILD"
        assert answer["server"]["image"] == ""

        server = wait_server(nova, server.id, aio=aio, timeout=240)
        assert attached_volume_ids(server) == [root_id]
        volume = wait_volume(cinder, root_id, "in-use")
        assert volume.volume_image_metadata["image_id"] == image_id
        disks = domain_disks(aio, server.id)
        assert list(disks) == [root_id]
        assert _sha256_head(disks[root_id], len(PATTERN)) == \
            hashlib.sha256(PATTERN).hexdigest()
        actions = nova.instance_action.list(server.id)
        assert actions[0].action == "rebuild"
    finally:
        delete_server_quietly(nova, server.id)
        glance_delete(aio, image_id)
