"""os-volume_attachments against the all-in-one: real Cinder 29, real QEMU (issue 4).

Raw HTTP at the microversions whose representation differs, then the
unmodified novaclient and openstacksdk calls. The QEMU domain is read back
by the compute (``volumesvc-manage server domain-xml``) to show the disk
arrive and leave with the volume id as serial.
"""

import os

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

# Shared with the multiattach suite (helpers.py); the short names read better here.
_http, _domain_disks, _wait = compute_http, domain_disks, wait_until

KEYS = {
    "2.1": {"id", "volumeId", "serverId", "device"},
    "2.70": {"id", "volumeId", "serverId", "device", "tag"},
    "2.79": {"id", "volumeId", "serverId", "device", "tag", "delete_on_termination"},
    "2.89": {"volumeId", "serverId", "device", "tag", "delete_on_termination",
             "attachment_id", "bdm_uuid"},
}


@pytest.fixture(scope="module")
def server(aio, nova):
    with volume_backed_server(aio, nova, "att") as booted:
        yield booted


@pytest.fixture
def volume(cinder):
    made = cinder.volumes.create(1, name=unique("data"))
    wait_volume(cinder, made.id, "available")
    yield made
    delete_volume_quietly(cinder, made.id)


def _detach(aio, cinder, server_id, volume_id):
    status, _, _ = _http(aio, "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}")
    assert status == 202
    wait_volume(cinder, volume_id, "available")
    _wait(lambda: volume_id not in _domain_disks(aio, server_id), "disk gone from the domain")


@pytest.mark.parametrize("version", ["2.1", "2.79", "2.89"])
def test_blocking_attach_answers_with_the_device(aio, cinder, server, volume, version):
    status, body, headers = _http(aio, "POST", f"/servers/{server.id}/os-volume_attachments",
                                  {"volumeAttachment": {"volumeId": volume.id}}, version)
    assert status == 200, body
    att = body["volumeAttachment"]
    expected = {"id", "volumeId", "serverId", "device"} | (
        {"tag", "delete_on_termination"} if version != "2.1" else set())
    assert set(att) == expected  # POST never takes the 2.89 shape (Nova)
    assert att["device"].startswith("/dev/sd") and att["volumeId"] == volume.id
    assert headers["OpenStack-API-Version"] == f"compute {version}"
    in_use = wait_volume(cinder, volume.id, "in-use")
    assert [a["server_id"] for a in in_use.attachments] == [server.id]
    assert os.path.isfile(_domain_disks(aio, server.id)[volume.id])

    for rep, keys in KEYS.items():
        status, listing, _ = _http(aio, "GET", f"/servers/{server.id}/os-volume_attachments",
                                   version=rep)
        mine = [a for a in listing["volumeAttachments"] if a["volumeId"] == volume.id]
        assert status == 200 and len(mine) == 1 and set(mine[0]) == keys, (rep, mine)
        status, shown, _ = _http(
            aio, "GET", f"/servers/{server.id}/os-volume_attachments/{volume.id}", version=rep)
        assert status == 200 and shown["volumeAttachment"] == mine[0]
    assert shown["volumeAttachment"]["attachment_id"] == in_use.attachments[0]["attachment_id"]
    _detach(aio, cinder, server.id, volume.id)


def test_async_attach_at_2_101_then_update_and_detach(aio, cinder, server, volume):
    status, body, headers = _http(aio, "POST", f"/servers/{server.id}/os-volume_attachments",
                                  {"volumeAttachment": {"volumeId": volume.id}}, "2.101")
    assert status == 202 and body is None and headers.get("Content-Length") == "0"
    assert headers["OpenStack-API-Version"] == "compute 2.101"

    def listed():
        _, listing, _ = _http(aio, "GET", f"/servers/{server.id}/os-volume_attachments",
                              version="2.89")
        return [a for a in listing["volumeAttachments"] if a["volumeId"] == volume.id]
    (att,) = _wait(listed, "the reservation to be visible")
    assert att["device"] and att["attachment_id"]
    wait_volume(cinder, volume.id, "in-use")
    assert volume.id in _domain_disks(aio, server.id)

    status, _, _ = _http(aio, "PUT", f"/servers/{server.id}/os-volume_attachments/{volume.id}",
                         {"volumeAttachment": {"volumeId": volume.id,
                                               "delete_on_termination": True}}, "2.85")
    assert status == 202
    _, shown, _ = _http(aio, "GET", f"/servers/{server.id}/os-volume_attachments/{volume.id}",
                        version="2.89")
    assert shown["volumeAttachment"]["delete_on_termination"] is True
    _detach(aio, cinder, server.id, volume.id)


def test_novaclient_attach_list_detach(aio, nova, cinder, server, volume):
    att = nova.volumes.create_server_volume(server.id, volume.id)
    assert att.volumeId == volume.id and att.device
    wait_volume(cinder, volume.id, "in-use")
    assert volume.id in [a.volumeId for a in nova.volumes.get_server_volumes(server.id)]
    nova.volumes.delete_server_volume(server.id, volume.id)
    wait_volume(cinder, volume.id, "available")
    _wait(lambda: volume.id not in [a.volumeId for a in
                                    nova.volumes.get_server_volumes(server.id)], "BDM gone")


def test_openstacksdk_attach_list_detach(aio, sdk, cinder, server, volume):
    att = sdk.compute.create_volume_attachment(server.id, volume_id=volume.id)
    assert att.volume_id == volume.id
    wait_volume(cinder, volume.id, "in-use")
    assert volume.id in [a.volume_id for a in sdk.compute.volume_attachments(server.id)]
    sdk.compute.delete_volume_attachment(server.id, volume.id)
    wait_volume(cinder, volume.id, "available")
    _wait(lambda: volume.id not in [a.volume_id for a in
                                    sdk.compute.volume_attachments(server.id)], "BDM gone")
    assert volume.id not in _domain_disks(aio, server.id)
