"""Read-only attachments (2.108) of an RBD volume: a network disk QEMU opens itself.

The storage tier's all-in-one (``conftest.py``: a one-node Ceph, Cinder's
``rbd`` backend, computes on ``qemu:///system``). One multiattach RBD volume
goes read-only to one server and read-write to another: Cinder records the
two modes, and the live domains read back through the compute have an
``rbd`` network disk each, ``<readonly/>`` only on the first. The file
backend's counterpart is ``tests/integration/clients/test_read_only_attachments.py``.
"""

import contextlib

import pytest

from tests.integration.clients.helpers import (
    cinder_attach_mode,
    compute_http,
    domain_disk,
    unique,
    wait_until,
    wait_volume,
)
from tests.integration.storage.steps import (
    boot,
    detach,
    new_volume,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def multi_rbd(cinder):
    """A multiattach volume type on Cinder's rbd backend (the rbd type's specs + multiattach)."""
    rbd_type = next(t for t in cinder.volume_types.list() if t.name == "rbd")
    vtype = cinder.volume_types.create(unique("rbd-multi"))
    vtype.set_keys({**rbd_type.get_keys(), "multiattach": "<is> True"})
    yield vtype
    with contextlib.suppress(Exception):
        cinder.volume_types.delete(vtype.id)


def _root(volume_type="rbd"):
    return {"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "volume_type": volume_type, "boot_index": 0, "delete_on_termination": True}


def _attach(aio, server_id, volume_id, read_only):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id,
                                                         "read_only": read_only}},
                                   version="2.108")
    assert status == 202, body


_disk, _mode = domain_disk, cinder_attach_mode


def test_one_rbd_volume_read_only_on_one_server_and_read_write_on_another(
        aio, nova, cinder, created, multi_rbd):
    reader = boot(aio, nova, created, _root())
    writer = boot(aio, nova, created, _root())
    volume = new_volume(cinder, created, multi_rbd.name)
    _attach(aio, reader.id, volume.id, True)
    wait_volume(cinder, volume.id, "in-use")
    _attach(aio, writer.id, volume.id, False)
    wait_until(lambda: len(cinder.volumes.get(volume.id).attachments) == 2,
               "two attachments in Cinder")
    assert (_mode(cinder, reader.id, volume.id), _mode(cinder, writer.id, volume.id)) == (
        "ro", "rw")
    read_disk, write_disk = _disk(aio, reader.id, volume.id), _disk(aio, writer.id, volume.id)
    for disk in (read_disk, write_disk):
        assert (disk.source_type, disk.source_protocol, disk.shareable) == (
            "network", "rbd", True)
    assert read_disk.readonly and not write_disk.readonly
    detach(aio, reader.id, volume.id)
    wait_until(lambda: [a["server_id"] for a in cinder.volumes.get(volume.id).attachments]
               == [writer.id] and cinder.volumes.get(volume.id).status == "in-use",
               "the reader's attachment gone")
    detach(aio, writer.id, volume.id)
    wait_volume(cinder, volume.id, "available")
