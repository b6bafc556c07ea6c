"""One all-in-one with its default storage (a one-node Ceph, Cinder ``rbd`` and ``file``) per run.

Starting it costs minutes (Ceph, Cinder, Glance, a system libvirt daemon), so
the storage modules share it: each module deletes the servers and volumes it
made, and none stops a service the others need. The module-scoped fixtures
below (``aio``, ``nova``, ``cinder``, ``created``) give each module its own
clients and its own list of what to delete at its end.
"""

import hashlib
import json
import os
import urllib.request

import pytest

from tests.integration.clients.helpers import (
    cinder_client,
    delete_server_quietly,
    delete_volume_quietly,
    glance_delete,
    nova_client,
    running_aio,
    unique,
)
from tests.integration.storage.proofs import MiB

# Random bytes: no hole, no zero block QEMU could skip, none the same as another.
PAYLOAD_BYTES = 64 * MiB


@pytest.fixture(scope="session")
def ceph_aio():
    """``volumesvc-aio --computes 2`` with Ceph: two computes on ``qemu:///system``."""
    with running_aio("vs-rbd-", extra_args=("--computes", "2"), storage=None) as handle:
        yield handle
    assert handle.returncode == 0, f"volumesvc-aio stopped with {handle.returncode}"


@pytest.fixture(scope="module")
def aio(ceph_aio):
    """The storage tier's shared all-in-one."""
    return ceph_aio


@pytest.fixture(scope="module")
def nova(aio):
    return nova_client(aio)


@pytest.fixture(scope="module")
def cinder(aio):
    return cinder_client(aio)


@pytest.fixture(scope="module")
def created(nova, cinder):
    """Servers and volumes the module made: whatever a failed test left is deleted at the end."""
    made = {"servers": [], "volumes": []}
    yield made
    for server_id in made["servers"]:
        delete_server_quietly(nova, server_id)
    for volume_id in made["volumes"]:
        delete_volume_quietly(cinder, volume_id)


@pytest.fixture(scope="module")
def payload(aio):
    """A public raw Glance image of random bytes: (image id, its bytes' SHA-256, its size)."""
    data = os.urandom(PAYLOAD_BYTES)

    def request(method, path, body=None, content_type="application/json"):
        req = urllib.request.Request(aio.image_url + path, data=body, method=method,
                                     headers={"Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=120) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None

    image = request("POST", "/v2/images", json.dumps({
        "name": unique("swap-payload"), "disk_format": "raw", "container_format": "bare",
        "visibility": "public"}).encode())
    try:
        request("PUT", f"/v2/images/{image['id']}/file", data,
                content_type="application/octet-stream")
        yield image["id"], hashlib.sha256(data).hexdigest(), len(data)
    finally:
        glance_delete(aio, image["id"])
