"""The all-in-one's starter image in a real Glance: the guest image, uploaded once.

``aio/volumesvc_aio/config.py:ensure_image`` uploads the project's own guest
image (doc/source/admin/guest-image.rst); a restart reuses it, and an image
of the same name from an older build makes way for the current one.
"""

import hashlib
import json
import os
import urllib.request
import uuid

from volumesvc_aio import config as aio_config
from volumesvc_aio import guest_image


def _glance(url, method, path, body=None, content_type="application/json"):
    req = urllib.request.Request(url + path, data=body, method=method,
                                 headers={"Content-Type": content_type})
    with urllib.request.urlopen(req, timeout=60) as resp:
        data = resp.read()
        return json.loads(data) if data else None


def test_starter_image_is_the_guest_image_and_an_older_build_makes_way(glance_harness,
                                                                      tmp_path):
    url = glance_harness.url
    name = f"starter-{uuid.uuid4().hex[:8]}"
    # What a restart finds after the guest's inputs changed: an active image
    # of that name with other bytes.
    old = _glance(url, "POST", "/v2/images", json.dumps({
        "name": name, "disk_format": "raw", "container_format": "bare",
        "visibility": "public"}).encode())
    _glance(url, "PUT", f"/v2/images/{old['id']}/file", b"\0" * 4096,
            content_type="application/octet-stream")

    image_id = aio_config.ensure_image(url, str(tmp_path), name=name)

    assert image_id != old["id"]
    with open(guest_image.ensure_image(), "rb") as f:
        built = f.read()
    image = _glance(url, "GET", f"/v2/images/{image_id}")
    assert (image["name"], image["status"], image["disk_format"], image["visibility"],
            image["min_disk"]) == (name, "active", "raw", "public", 1)
    assert image["size"] == len(built) == os.path.getsize(guest_image.ensure_image())
    assert image["os_hash_value"] == hashlib.sha512(built).hexdigest()
    # The older build keeps its id and content under another name.
    renamed = _glance(url, "GET", f"/v2/images/{old['id']}")
    assert (renamed["name"], renamed["status"]) == (f"{name}-{old['id'][:8]}", "active")
    assert [i["id"] for i in _glance(url, "GET", f"/v2/images?name={name}")["images"]] \
        == [image_id]
    # A restart: the same image, nothing uploaded again.
    assert aio_config.ensure_image(url, str(tmp_path), name=name) == image_id
    assert len(_glance(url, "GET", f"/v2/images?name={name}")["images"]) == 1
