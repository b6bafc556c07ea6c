"""Swap volume against the all-in-one: real Cinder 29, real QEMU.

A swap Cinder did not ask for (the old volume is not being migrated) is
refused as Nova refuses it, and leaves the server's disk and both volumes as
they were.
"""

import pytest

from tests.integration.clients.helpers import (
    compute_http,
    delete_volume_quietly,
    domain_disks,
    unique,
    volume_backed_server,
    wait_until,
    wait_volume,
)


@pytest.fixture(scope="module")
def server(aio, nova):
    with volume_backed_server(aio, nova, "swap") as booted:
        yield booted


def _attach(aio, cinder, server_id, volume_id):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id}}, "2.101")
    assert status == 202, body
    wait_volume(cinder, volume_id, "in-use")
    return wait_until(lambda: domain_disks(aio, server_id).get(volume_id), "the disk in the guest")


def _detach(aio, cinder, server_id, volume_id):
    status, body, _ = compute_http(aio, "DELETE",
                                   f"/servers/{server_id}/os-volume_attachments/{volume_id}")
    assert status == 202, body
    wait_volume(cinder, volume_id, "available")


def _one_attachment(aio, cinder, server_id, volume_id):
    """Cinder has one attachment of the volume, the one the server's BDM names."""
    volume = cinder.volumes.get(volume_id)
    (entry,) = volume.attachments
    status, shown, _ = compute_http(
        aio, "GET", f"/servers/{server_id}/os-volume_attachments/{volume_id}", version="2.89")
    assert status == 200, shown
    assert shown["volumeAttachment"]["attachment_id"] == entry["attachment_id"]


def test_a_swap_cinder_did_not_ask_for_is_refused(aio, cinder, server):
    """As Nova (bug 2112187): a volume nobody migrates is not swapped under a server."""
    volume = cinder.volumes.create(1, name=unique("swap-old"))
    new = cinder.volumes.create(1, name=unique("swap-new"))
    try:
        wait_volume(cinder, new.id, "available")
        wait_volume(cinder, volume.id, "available")
        before = _attach(aio, cinder, server.id, volume.id)
        status, body, _ = compute_http(
            aio, "PUT", f"/servers/{server.id}/os-volume_attachments/{volume.id}",
            {"volumeAttachment": {"volumeId": new.id}})
        assert status == 409, body
        assert "is not being migrated" in body["conflictingRequest"]["message"]
        assert cinder.volumes.get(new.id).status == "available"
        assert domain_disks(aio, server.id)[volume.id] == before
        _one_attachment(aio, cinder, server.id, volume.id)
        _detach(aio, cinder, server.id, volume.id)
    finally:
        delete_volume_quietly(cinder, new.id)
        delete_volume_quietly(cinder, volume.id)
