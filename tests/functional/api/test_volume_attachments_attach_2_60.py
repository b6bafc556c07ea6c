"""POST at 2.60: multiattach volumes may be attached to several servers, never
twice to one, and not to a shelved-offloaded server.
"""


from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import (
    assert_fault,
    at_version,
    attach,
    attachments_url,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.60")


def test_a_multiattach_volume_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # a multiattach volume
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["MULTI"])
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["MULTI"]

    # the same multiattach volume on a second server
    resp = attach(client, SERVER["SECOND"], HEADERS, volumeId=VOLUME["MULTI"])
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdd"

    for step, server, volume, message in [
        ("and again on the first one", "ACTIVE", "MULTI",
         f"volume {VOLUME['MULTI']} is already attached to instances: {SERVER['ACTIVE']}"),
        ("a single-attach volume stays single", "SECOND", "DATA",
         f"volume {VOLUME['DATA']} is already attached to instances: {SERVER['ACTIVE']}"),
        ("multiattach on a shelved-offloaded server", "SHELVED_OFFLOADED", "MULTI",
         "Attaching multiattach volumes is not supported for shelved-offloaded instances."),
    ]:
        assert_fault(attach(client, SERVER[server], HEADERS, volumeId=VOLUME[volume]), 400,
                     message, step=step)

    # both attachments are listed at 2.89
    resp = client.get(attachments_url(SERVER["SECOND"]), headers=at_version(HEADERS, "2.89"))
    assert resp.status_code == 200, resp.text
    assert [item["volumeId"] for item in resp.json["volumeAttachments"]] == [
                                                                                VOLUME["SHARED"],
                                                                                VOLUME["DETACHING"],
                                                                                VOLUME["MULTI"],
                                                                            ]
