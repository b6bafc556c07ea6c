"""Cinder's attachment-delete guard (CVE-2023-2088) against volumesvc, both ways.

A user who deletes the Cinder attachment of a volume volumesvc still has
attached must be refused by Cinder: Cinder asks our
``GET /servers/{id}/os-volume_attachments/{vol}`` at 2.89 with the user's
token and refuses when the attachment id we report is the one being deleted.
volumesvc's own detach deletes the same attachment and must succeed, which
it only does because its calls carry an ``X-Service-Token`` of the
``volumesvc`` service user (``[service_user] send_service_user_token``).
"""

import pytest
from cinderclient import exceptions as cinder_exc

from tests.integration.keystone.conftest import cinder_for, wait_volume_status


def test_user_attachment_delete_refused_while_volumesvc_detach_succeeds(
        kaio, compute, token, demo_server):
    member = token("demo", "demo")
    cinder = cinder_for(kaio, member)
    volume = cinder.volumes.create(1, name="ks-guard")
    wait_volume_status(cinder, volume.id, "available")
    path = f"/servers/{demo_server}/os-volume_attachments"
    status, _, body = compute("POST", path, member,
                              {"volumeAttachment": {"volumeId": volume.id}})
    assert status == 200, body
    wait_volume_status(cinder, volume.id, "in-use")
    status, _, body = compute("GET", f"{path}/{volume.id}", member, version="2.89")
    assert status == 200, body
    attachment_id = body["volumeAttachment"]["attachment_id"]
    assert [a["attachment_id"] for a in cinder.volumes.get(volume.id).attachments] == [
        attachment_id]

    with pytest.raises(cinder_exc.ClientException) as refused:
        cinder.attachments.delete(attachment_id)
    assert refused.value.code == 409, refused.value
    assert f"Detach volume from instance {demo_server} using the Compute API" in str(
        refused.value)
    # Nothing changed on either side.
    still = cinder.volumes.get(volume.id)
    assert still.status == "in-use"
    assert [a["attachment_id"] for a in still.attachments] == [attachment_id]
    status, _, body = compute("GET", f"{path}/{volume.id}", member, version="2.89")
    assert status == 200 and body["volumeAttachment"]["attachment_id"] == attachment_id

    status, _, body = compute("DELETE", f"{path}/{volume.id}", member)
    assert status == 202, body
    detached = wait_volume_status(cinder, volume.id, "available")
    assert detached.attachments == []
    cinder.volumes.delete(volume.id)
