"""API 2.106 against the all-in-one: real Cinder 29, real QEMU, a client that polls.

A client that knows only ``os-volume_attachments`` attaches at 2.101 and
polls at 2.106. Each time the API says ``attached`` the test reads Cinder and
the live domain (through the compute) too: ``attached`` must never be shown
before Cinder says ``in-use`` and the domain has the disk. A forced failure
(the aio's Cinder driver refuses the connection of a volume with the
``volumesvc_refuse_connection`` metadata, so Cinder refuses the attachment
update) shows ``error`` with the reason, then expires after the TTL.
"""

import time

import pytest

from tests.integration.clients.conftest import FAILED_ATTACHMENT_TTL
from tests.integration.clients.helpers import (
    compute_http,
    delete_volume_quietly,
    domain_disks,
    unique,
    volume_backed_server,
    wait_until,
    wait_volume,
)

STATUSES = {"attaching", "attached", "detaching", "error"}


@pytest.fixture(scope="module")
def server(aio, nova):
    with volume_backed_server(aio, nova, "status") as booted:
        yield booted


def _volume(cinder, **metadata):
    made = cinder.volumes.create(1, name=unique("st"), metadata=metadata or None)
    wait_volume(cinder, made.id, "available")
    return made


def _entry(aio, server_id, volume_id):
    """The volume's entry in the 2.106 list (None when not listed)."""
    status, body, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-volume_attachments",
                                   version="2.106")
    assert status == 200, body
    for entry in body["volumeAttachments"]:
        assert entry["status"] in STATUSES, entry
    return next((e for e in body["volumeAttachments"] if e["volumeId"] == volume_id), None)


def test_polling_sees_attaching_then_attached_then_detaching_then_gone(aio, cinder, server):
    volume = _volume(cinder)
    try:
        status, _, _ = compute_http(aio, "POST", f"/servers/{server.id}/os-volume_attachments",
                                    {"volumeAttachment": {"volumeId": volume.id}}, "2.101")
        assert status == 202
        seen, deadline = [], time.monotonic() + 120
        while time.monotonic() < deadline:
            entry = _entry(aio, server.id, volume.id)
            shown = entry and entry["status"]
            if shown and (not seen or seen[-1] != shown):
                seen.append(shown)
            if shown == "attached":
                # Read both each time the API says attached.
                assert cinder.volumes.get(volume.id).status == "in-use", seen
                assert volume.id in domain_disks(aio, server.id), seen
                break
            time.sleep(0.05)
        assert seen == ["attaching", "attached"], seen

        status, _, _ = compute_http(
            aio, "DELETE", f"/servers/{server.id}/os-volume_attachments/{volume.id}",
            version="2.106")
        assert status == 202
        seen = []
        while time.monotonic() < deadline:
            entry = _entry(aio, server.id, volume.id)
            shown = entry["status"] if entry else "gone"
            if not seen or seen[-1] != shown:
                seen.append(shown)
            if shown == "gone":
                break
            time.sleep(0.05)
        assert seen == ["detaching", "gone"], seen
        wait_volume(cinder, volume.id, "available")
        assert volume.id not in domain_disks(aio, server.id)
    finally:
        delete_volume_quietly(cinder, volume.id)


def test_a_refused_attachment_update_shows_error_then_expires(aio, cinder, server):
    volume = _volume(cinder, volumesvc_refuse_connection="true")
    try:
        status, _, _ = compute_http(aio, "POST", f"/servers/{server.id}/os-volume_attachments",
                                    {"volumeAttachment": {"volumeId": volume.id}}, "2.101")
        assert status == 202
        entry = wait_until(lambda: (lambda e: e if e and e["status"] == "error" else None)(
            _entry(aio, server.id, volume.id)), "the error entry")
        assert entry["fault"]["code"] >= 400
        assert entry["fault"]["message"], entry
        assert "fault" in entry and entry["fault"]["created"].endswith("Z")
        # Not listed below 2.106, no Cinder attachment left, nothing in the domain.
        _, old, _ = compute_http(aio, "GET", f"/servers/{server.id}/os-volume_attachments",
                                 version="2.105")
        assert volume.id not in [a["volumeId"] for a in old["volumeAttachments"]]
        wait_volume(cinder, volume.id, "available")
        assert volume.id not in domain_disks(aio, server.id)
        # The reason is the one the instance action records.
        _, actions, _ = compute_http(aio, "GET", f"/servers/{server.id}/os-instance-actions",
                                     version="2.106")
        request_ids = [a["request_id"] for a in actions["instanceActions"]
                       if a["action"] == "attach_volume"]
        details = []
        for request_id in request_ids:
            _, action, _ = compute_http(
                aio, "GET", f"/servers/{server.id}/os-instance-actions/{request_id}",
                version="2.106")
            details += [e.get("details") for e in action["instanceAction"]["events"]]
        assert entry["fault"]["message"] in details
        wait_until(lambda: _entry(aio, server.id, volume.id) is None,
                   "the error entry to expire", timeout=FAILED_ATTACHMENT_TTL + 30)
    finally:
        delete_volume_quietly(cinder, volume.id)
