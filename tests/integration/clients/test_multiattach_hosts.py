"""Multiattach on a two-compute all-in-one with the real Cinder 29 and QEMU (issue 8).

``<host>`` runs libvirt as is, ``<host>-2`` with ``supports_multiattach``
switched off (``--compute-driver <host>-2=libvirt,-supports_multiattach``).
One multiattach volume goes to two servers on the capable host and is read
back from both live domains as a shareable disk with the volume id as
serial; Cinder shows two attachments and ``in-use``; detaching one keeps
the other's attachment, detaching both makes it ``available``. Two and
five detaches of one volume sent together all succeed (Cinder begins one
detach of a volume at a time; the API waits its turn). A server on the
other host is refused the volume with 409 before anything is reserved,
and a boot with a multiattach root never lands there.
"""

import functools
import subprocess
import xml.etree.ElementTree as ET

import pytest

from tests.fixtures.together import run_together
from tests.integration.clients.helpers import (
    cinder_client,
    compute_http,
    delete_volume_quietly,
    running_aio,
    unique,
    wait_until,
    wait_volume,
)
from tests.integration.conftest import bin_path

MULTI_TYPE = "multiattach"


@pytest.fixture(scope="module")
def aio2():
    with running_aio("vs-multi-", extra_args=(
            "--computes", "2", "--compute-driver",
            "{host}-2=libvirt,-supports_multiattach")) as handle:
        yield handle
    assert handle.leftover_qemu == []


@pytest.fixture(scope="module")
def cinder(aio2):
    client = cinder_client(aio2)
    vtype = client.volume_types.create(MULTI_TYPE)
    vtype.set_keys({"multiattach": "<is> True"})
    return client


def _host(aio, server_id):
    _, body, _ = compute_http(aio, "GET", f"/servers/{server_id}")
    return body["server"]["OS-EXT-SRV-ATTR:host"]


def _boot(aio, name, bdm, created):
    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique(name), "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": [bdm]}}, version="2.67")
    assert status == 202, body
    server_id = body["server"]["id"]
    created.append(server_id)

    def built():
        _, shown, _ = compute_http(aio, "GET", f"/servers/{server_id}")
        return shown["server"]["status"] in ("ACTIVE", "ERROR") and shown["server"]
    server = wait_until(built, f"server {server_id} built", timeout=180)
    assert server["status"] == "ACTIVE", server
    return server_id


def _blank_root(volume_type=None):
    bdm = {"source_type": "blank", "destination_type": "volume", "boot_index": 0,
           "volume_size": 1, "delete_on_termination": True}
    if volume_type:
        bdm["volume_type"] = volume_type
    return bdm


def _shared_disk(aio, server_id, volume_id):
    out = subprocess.run(
        [bin_path("volumesvc-manage"), "--config-file", f"{aio.state_dir}/volumesvc.conf",
         "server", "domain-xml", server_id],
        capture_output=True, text=True, timeout=60, check=True).stdout
    for disk in ET.fromstring(out).findall("./devices/disk"):
        if disk.findtext("serial") == volume_id:
            return disk
    return None


def _attach_each(aio, server_ids, volume_id):
    """Attach the volume to each server in turn (2.60: answered once it is attached)."""
    for server_id in server_ids:
        status, body, _ = compute_http(
            aio, "POST", f"/servers/{server_id}/os-volume_attachments",
            {"volumeAttachment": {"volumeId": volume_id}}, version="2.60")
        assert status == 200, body


@pytest.fixture(scope="module")
def servers(aio2, cinder):
    """(two servers on the capable host, one on the other host)."""
    created = []
    capable = [_boot(aio2, "multi", _blank_root(MULTI_TYPE), created) for _ in range(2)]
    plain = _boot(aio2, "plain", _blank_root(), created)
    yield capable, plain
    for server_id in created:
        compute_http(aio2, "DELETE", f"/servers/{server_id}")


def test_placement_puts_multiattach_roots_on_the_capable_host_only(aio2, servers):
    capable, plain = servers
    hosts = {_host(aio2, s) for s in capable}
    assert len(hosts) == 1
    (capable_host,) = hosts
    assert _host(aio2, plain) == f"{capable_host}-2"


def test_one_volume_on_two_servers_then_detached_one_by_one(aio2, cinder, servers):
    capable, _plain = servers
    volume = cinder.volumes.create(1, name=unique("shared"), volume_type=MULTI_TYPE)
    try:
        wait_volume(cinder, volume.id, "available")
        _attach_each(aio2, capable, volume.id)
        wait_until(lambda: len(cinder.volumes.get(volume.id).attachments) == 2
                   and cinder.volumes.get(volume.id).status == "in-use", "two attachments")
        for server_id in capable:
            disk = _shared_disk(aio2, server_id, volume.id)
            assert disk is not None and disk.find("shareable") is not None
            assert disk.find("driver").get("cache") == "none"
        entries = {a["server_id"]: a["attachment_id"]
                   for a in cinder.volumes.get(volume.id).attachments}

        status, _, _ = compute_http(
            aio2, "DELETE", f"/servers/{capable[0]}/os-volume_attachments/{volume.id}")
        assert status == 202
        wait_until(lambda: [a["attachment_id"] for a in
                            cinder.volumes.get(volume.id).attachments] ==
                   [entries[capable[1]]], "only the second attachment left")
        assert cinder.volumes.get(volume.id).status == "in-use"
        assert _shared_disk(aio2, capable[0], volume.id) is None
        assert _shared_disk(aio2, capable[1], volume.id) is not None

        status, _, _ = compute_http(
            aio2, "DELETE", f"/servers/{capable[1]}/os-volume_attachments/{volume.id}")
        assert status == 202
        wait_volume(cinder, volume.id, "available")
    finally:
        delete_volume_quietly(cinder, volume.id)


@pytest.mark.parametrize("version", ["2.60", "2.101"])
def test_attach_to_the_incapable_host_is_a_409_up_front(aio2, cinder, servers, version):
    _capable, plain = servers
    volume = cinder.volumes.create(1, name=unique("shared"), volume_type=MULTI_TYPE)
    try:
        wait_volume(cinder, volume.id, "available")
        status, body, _ = compute_http(
            aio2, "POST", f"/servers/{plain}/os-volume_attachments",
            {"volumeAttachment": {"volumeId": volume.id}}, version=version)
        assert status == 409, body
        assert "supports_multiattach is off" in body["conflictingRequest"]["message"]
        shown = cinder.volumes.get(volume.id)
        assert (shown.status, shown.attachments) == ("available", [])
    finally:
        delete_volume_quietly(cinder, volume.id)


@pytest.fixture(scope="module")
def five(aio2, servers):
    """Five servers on the capable host: the module's two and three more."""
    capable, _plain = servers
    created = []
    more = [_boot(aio2, "multi", _blank_root(MULTI_TYPE), created) for _ in range(3)]
    yield [*capable, *more]
    for server_id in created:
        compute_http(aio2, "DELETE", f"/servers/{server_id}")


def _detach_together(aio, server_ids, volume_id):
    """DELETE the volume from every server at once (2.101); the status codes in order."""
    answers = run_together([functools.partial(
        compute_http, aio, "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}",
        version="2.101") for server_id in server_ids], timeout=180)
    return [a[0] if isinstance(a, tuple) else a for a in answers]


@pytest.mark.parametrize("count", [2, 5])
def test_detaches_of_one_volume_sent_together_all_succeed(aio2, cinder, five, count):
    server_ids = five[:count]
    volume = cinder.volumes.create(1, name=unique("shared"), volume_type=MULTI_TYPE)
    try:
        wait_volume(cinder, volume.id, "available")
        _attach_each(aio2, server_ids, volume.id)
        wait_until(lambda: len(cinder.volumes.get(volume.id).attachments) == count,
                   f"{count} attachments")

        assert _detach_together(aio2, server_ids, volume.id) == [202] * count
        wait_volume(cinder, volume.id, "available", timeout=180)
        assert cinder.volumes.get(volume.id).attachments == []
        for server_id in server_ids:
            assert _shared_disk(aio2, server_id, volume.id) is None
            _, body, _ = compute_http(aio2, "GET",
                                      f"/servers/{server_id}/os-volume_attachments")
            assert volume.id not in [a["volumeId"] for a in body["volumeAttachments"]]
    finally:
        delete_volume_quietly(cinder, volume.id)


def test_detaches_racing_attaches_of_the_same_volume_all_succeed(aio2, cinder, five):
    """Two servers leave a shared volume while two others join it, all sent at once.

    Cinder runs one attachment change of a volume at a time (its
    begin_detaching refuses while another runs): the detaches wait their
    turn, the attaches their reservation, and every one of them ends done.
    """
    leaving, joining = five[:2], five[2:4]
    volume = cinder.volumes.create(1, name=unique("shared"), volume_type=MULTI_TYPE)
    try:
        wait_volume(cinder, volume.id, "available")
        _attach_each(aio2, leaving, volume.id)
        wait_until(lambda: len(cinder.volumes.get(volume.id).attachments) == 2,
                   "2 attachments")
        answers = run_together(
            [functools.partial(
                compute_http, aio2, "DELETE",
                f"/servers/{server_id}/os-volume_attachments/{volume.id}", version="2.101")
             for server_id in leaving]
            + [functools.partial(
                compute_http, aio2, "POST", f"/servers/{server_id}/os-volume_attachments",
                {"volumeAttachment": {"volumeId": volume.id}}, version="2.101")
               for server_id in joining], timeout=180)
        assert [a[0] if isinstance(a, tuple) else a for a in answers] == [202] * 4, answers

        def settled():
            attached = {a["server_id"] for a in cinder.volumes.get(volume.id).attachments}
            return attached == set(joining)

        wait_until(settled, "the joining servers attached and the leaving ones gone",
                   timeout=180)
        wait_volume(cinder, volume.id, "in-use")
        for server_id in leaving:
            assert _shared_disk(aio2, server_id, volume.id) is None
        for server_id in joining:
            assert _shared_disk(aio2, server_id, volume.id) is not None
            _, body, _ = compute_http(aio2, "GET", f"/servers/{server_id}/os-volume_attachments",
                                      version="2.106")
            (entry,) = [a for a in body["volumeAttachments"] if a["volumeId"] == volume.id]
            assert entry["status"] == "attached", entry
        _detach_together(aio2, joining, volume.id)
        wait_volume(cinder, volume.id, "available", timeout=180)
    finally:
        delete_volume_quietly(cinder, volume.id)
