"""POST at 2.70 (tag echoed) and 2.79 (delete_on_termination, boolean-like);
the 2.89 representation was never applied to POST, so 2.89 keeps id.
"""


from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import at_version, attach, json_headers

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.79")


def test_at_2_70_the_tag_is_echoed_null_when_absent_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # at 2.70 the tag is echoed, null when absent
    resp = attach(client, SERVER["ACTIVE"], at_version(HEADERS, "2.70"), volumeId=VOLUME["FREE"])
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"] == {
                                                "id": VOLUME["FREE"],
                                                "serverId": SERVER["ACTIVE"],
                                                "volumeId": VOLUME["FREE"],
                                                "device": "/dev/vdf",
                                                "tag": None,
                                            }

    # at 2.79 delete_on_termination as a string
    resp = attach(client, SERVER["SECOND"], HEADERS, volumeId=VOLUME["FREE2"], tag="logs",
                  delete_on_termination="yes")
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"] == {
                                                "id": VOLUME["FREE2"],
                                                "serverId": SERVER["SECOND"],
                                                "volumeId": VOLUME["FREE2"],
                                                "device": "/dev/vdd",
                                                "tag": "logs",
                                                "delete_on_termination": True,
                                            }

    # a value that is not boolean-like
    resp = attach(client, SERVER["SECOND"], HEADERS, volumeId=VOLUME["STOPPED_DATA"],
                  delete_on_termination="maybe")
    assert resp.status_code == 400, resp.text

    # an attached volume at 2.89
    resp = attach(client, SERVER["PAUSED"], at_version(HEADERS, "2.89"),
                  volumeId=VOLUME["STOPPED_DATA"])
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['STOPPED_DATA']} is already attached to instances: {SERVER['STOPPED']}")

    # at 2.89 the POST body has id and no attachment_id
    resp = attach(client, SERVER["PAUSED"], at_version(HEADERS, "2.89"), volumeId=VOLUME["MULTI"])
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 6
    assert resp.json["volumeAttachment"]["id"] == VOLUME["MULTI"]

    # at 2.100 the POST body still has id and no attachment_id
    resp = attach(client, SERVER["SECOND"], at_version(HEADERS, "2.100"), volumeId=VOLUME["MULTI"],
                  delete_on_termination=False)
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 6
    assert resp.json["volumeAttachment"]["id"] == VOLUME["MULTI"]
    assert resp.json["volumeAttachment"]["delete_on_termination"] is False
    assert resp.json["volumeAttachment"]["device"] == "/dev/vde"

