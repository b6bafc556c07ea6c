"""Read-only attachments (2.108) against the all-in-one: real Cinder 29, real QEMU.

Cinder is asked through python-cinderclient what it made of each attachment
(``attach_mode``); the live domain's XML, read back by the compute
(``volumesvc-manage server domain-xml``), shows what the guest got. Cinder
29 leaves ``access_mode`` at ``rw`` in the connection info of a ``mode: ro``
attachment of a writable volume, so these tests are what shows the guest
still gets ``<readonly/>``.
"""

import contextlib

import pytest

from tests.integration.clients.helpers import (
    cinder_attach_mode,
    compute_http,
    delete_volume_quietly,
    domain_disk,
    unique,
    volume_backed_server,
    wait_until,
    wait_volume,
)


@pytest.fixture(scope="module")
def servers(aio, nova):
    with volume_backed_server(aio, nova, "ro-a") as first, \
            volume_backed_server(aio, nova, "ro-b") as second:
        yield first, second


@pytest.fixture(scope="module")
def multi_type(cinder):
    vtype = cinder.volume_types.create(unique("ro-multi"))
    vtype.set_keys({"multiattach": "<is> True"})
    yield vtype
    with contextlib.suppress(Exception):
        cinder.volume_types.delete(vtype.id)


@pytest.fixture
def volumes(cinder):
    made = []

    def create(**kwargs):
        volume = cinder.volumes.create(1, name=unique("ro"), **kwargs)
        made.append(volume.id)
        return wait_volume(cinder, volume.id, "available")

    yield create
    for volume_id in made:
        delete_volume_quietly(cinder, volume_id)


def _attach(aio, server_id, volume_id, **fields):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id, **fields}},
                                   version="2.108")
    assert status == 202, body


def _shown(aio, server_id, volume_id):
    status, body, _ = compute_http(
        aio, "GET", f"/servers/{server_id}/os-volume_attachments/{volume_id}", version="2.108")
    assert status == 200, body
    return body["volumeAttachment"]


_disk, _attach_mode = domain_disk, cinder_attach_mode


def _detach(aio, cinder, server_id, volume_id):
    status, body, _ = compute_http(
        aio, "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}")
    assert status == 202, body


def test_a_read_only_attach_is_ro_in_cinder_and_in_the_guest(aio, cinder, servers, volumes):
    server, _ = servers
    volume = volumes()
    _attach(aio, server.id, volume.id, read_only=True)
    wait_volume(cinder, volume.id, "in-use")
    assert _attach_mode(cinder, server.id, volume.id) == "ro"
    assert _disk(aio, server.id, volume.id).readonly
    shown = _shown(aio, server.id, volume.id)
    assert (shown["read_only"], shown["status"]) == (True, "attached")
    _detach(aio, cinder, server.id, volume.id)
    wait_volume(cinder, volume.id, "available")


def test_a_multiattach_volume_read_only_here_and_read_write_there(
        aio, cinder, servers, volumes, multi_type):
    reader, writer = servers
    volume = volumes(volume_type=multi_type.name)
    _attach(aio, reader.id, volume.id, read_only=True)
    wait_volume(cinder, volume.id, "in-use")
    _attach(aio, writer.id, volume.id, read_only=False)
    wait_until(lambda: len(cinder.volumes.get(volume.id).attachments) == 2,
               "two attachments in Cinder")
    assert _attach_mode(cinder, reader.id, volume.id) == "ro"
    assert _attach_mode(cinder, writer.id, volume.id) == "rw"
    read_disk = _disk(aio, reader.id, volume.id)
    write_disk = _disk(aio, writer.id, volume.id)
    assert (read_disk.readonly, read_disk.shareable) == (True, True)
    assert (write_disk.readonly, write_disk.shareable) == (False, True)
    assert _shown(aio, reader.id, volume.id)["read_only"] is True
    assert _shown(aio, writer.id, volume.id)["read_only"] is False
    # One detach at a time: Cinder refuses to begin one while the other runs.
    _detach(aio, cinder, reader.id, volume.id)
    wait_until(lambda: [a["server_id"] for a in cinder.volumes.get(volume.id).attachments]
               == [writer.id] and cinder.volumes.get(volume.id).status == "in-use",
               "the reader's attachment gone")
    _detach(aio, cinder, writer.id, volume.id)
    wait_volume(cinder, volume.id, "available")


def test_cinder_read_only_flag(aio, cinder, servers, volumes):
    server, _ = servers
    volume = volumes()
    cinder.volumes.update_readonly_flag(volume.id, True)
    # Asking for read-write is refused up front: Cinder would make it ro anyway.
    status, body, _ = compute_http(
        aio, "POST", f"/servers/{server.id}/os-volume_attachments",
        {"volumeAttachment": {"volumeId": volume.id, "read_only": False}}, version="2.108")
    assert status == 400, body
    assert "is read-only (Cinder's readonly flag)" in body["badRequest"]["message"]
    assert cinder.volumes.get(volume.id).status == "available"
    _attach(aio, server.id, volume.id)
    wait_volume(cinder, volume.id, "in-use")
    assert _attach_mode(cinder, server.id, volume.id) == "ro"
    assert _disk(aio, server.id, volume.id).readonly
    assert _shown(aio, server.id, volume.id)["read_only"] is True
    _detach(aio, cinder, server.id, volume.id)
    wait_volume(cinder, volume.id, "available")
