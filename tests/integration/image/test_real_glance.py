"""GlanceAPI against a real Glance 33 (session fixture ``glance_harness``).

What createImage of a volume-backed server relies on: a zero-byte image
becomes active, the owner we send is recorded, and the BDM properties
(``bdm_v2`` and the JSON string ``block_device_mapping``) read back intact.
"""

import json
import uuid

import pytest

from volumesvc import exception
from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.image.glance import GlanceAPI


@pytest.fixture
def glance(glance_harness):
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "noauth", group="glance")
    conf.set_override("endpoint_override", glance_harness.url, group="glance")
    return GlanceAPI(conf)


@pytest.fixture
def ctx():
    return RequestContext(user_id="demo", project_id=uuid.uuid4().hex, roles=["member"])


def test_zero_byte_snapshot_image_with_bdm_properties(glance, ctx):
    mapping = [{"source_type": "snapshot", "destination_type": "volume",
                "snapshot_id": str(uuid.uuid4()), "boot_index": 0, "device_name": "/dev/vda",
                "volume_type": "fast", "volume_id": None, "delete_on_termination": False}]
    image = glance.create(ctx, name="snap-1", owner=ctx.project_id, properties={
        "root_device_name": "/dev/vda", "bdm_v2": True, "block_device_mapping": mapping})
    try:
        assert image["status"] == "active"
        assert image["size"] == 0
        assert image["owner"] == ctx.project_id
        assert image["disk_format"] == "raw"
        assert image["container_format"] == "bare"
        fetched = glance.get(ctx, image["id"])
        assert fetched["properties"]["bdm_v2"] == "True"
        assert fetched["properties"]["root_device_name"] == "/dev/vda"
        assert json.loads(fetched["properties"]["block_device_mapping"]) == mapping
        listed = glance.list(ctx, bdm_v2=True, owner=ctx.project_id)
        assert [i["id"] for i in listed] == [image["id"]]
        assert glance.image_url(ctx, image["id"]) == \
            f"{glance.conf.glance.endpoint_override}/images/{image['id']}"
    finally:
        glance.delete(ctx, image["id"])
    with pytest.raises(exception.ImageNotFound):
        glance.get(ctx, image["id"])


def test_record_then_upload(glance, ctx):
    image = glance.create(ctx, name="queued", owner=ctx.project_id, size=None)
    assert image["status"] == "queued"
    glance.upload(ctx, image["id"], b"x" * 1024)
    image = glance.get(ctx, image["id"])
    assert (image["status"], image["size"]) == ("active", 1024)
    glance.delete(ctx, image["id"])


def test_not_found_translation(glance, ctx):
    missing = str(uuid.uuid4())
    with pytest.raises(exception.ImageNotFound):
        glance.get(ctx, missing)
    with pytest.raises(exception.ImageNotFound):
        glance.delete(ctx, missing)
    with pytest.raises(exception.ImageNotFound):
        glance.upload(ctx, missing, b"")


def test_connection_refused_is_glance_connection_failed(ctx):
    conf = get_conf(default_config_files=[])
    conf.set_override("auth_strategy", "noauth", group="glance")
    conf.set_override("endpoint_override", "http://127.0.0.1:9", group="glance")
    conf.set_override("num_retries", 0, group="glance")
    with pytest.raises(exception.GlanceConnectionFailed):
        GlanceAPI(conf).get(ctx, str(uuid.uuid4()))


def test_an_image_streamed_from_a_download_into_an_upload_is_copied(glance_harness):
    """Regression: one Glance worker deadlocked on a streamed image copy.

    tempest copies an image by feeding its download straight into another
    image's upload. Past the socket buffers (the 20 MB starter guest) a
    single sync worker held the upload while the download it read from
    waited for that same worker, and both ended at the client's timeout.
    """
    import os
    import urllib.request

    headers = {"Accept": "application/json", **glance_harness._auth_headers()}

    def call(method, path, body=None, content_type="application/json", stream=False):
        req = urllib.request.Request(glance_harness.url + path, data=body, method=method,
                                     headers={**headers, "Content-Type": content_type})
        resp = urllib.request.urlopen(req, timeout=30)
        if stream:
            return resp
        with resp:
            data = resp.read()
        return json.loads(data) if data else None

    def new_image(name):
        return call("POST", "/v2/images", json.dumps({
            "name": name, "disk_format": "raw", "container_format": "bare"}).encode())["id"]

    payload = os.urandom(24 * 1024 * 1024)
    source, copy = new_image("stream-source"), new_image("stream-copy")
    try:
        call("PUT", f"/v2/images/{source}/file", payload, "application/octet-stream")
        download = call("GET", f"/v2/images/{source}/file", stream=True)
        with download:
            chunks = iter(lambda: download.read(64 * 1024), b"")
            call("PUT", f"/v2/images/{copy}/file", chunks, "application/octet-stream")
        copied = call("GET", f"/v2/images/{copy}")
        assert copied["status"] == "active"
        assert copied["size"] == len(payload)
    finally:
        for image in (source, copy):
            call("DELETE", f"/v2/images/{image}")
