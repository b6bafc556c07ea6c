"""POST at 2.49: a device tag is accepted (shape-checked) but the 200 body is
still the 2.1 one; delete_on_termination is not known yet; shelved servers
(2.20) may attach, shelved-offloaded ones without a tag.
"""

import pytest

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
HEADERS = json_headers("2.49")


@pytest.mark.parametrize("server, fields, message", [
    pytest.param("ACTIVE", {"volumeId": VOLUME["FREE"], "tag": "a" * 61}, None,
                 id="a_tag_longer_than_60_characters"),
    pytest.param("ACTIVE", {"volumeId": VOLUME["FREE"], "tag": ""}, None, id="an_empty_tag"),
    pytest.param("ACTIVE", {"volumeId": VOLUME["FREE"], "tag": "a/b"}, None,
                 id="a_tag_with_a_slash"),
    pytest.param("ACTIVE", {"volumeId": VOLUME["FREE"], "tag": "a,b"}, None,
                 id="a_tag_with_a_comma"),
    pytest.param("ACTIVE", {"volumeId": VOLUME["FREE"], "delete_on_termination": True}, None,
                 id="delete_on_termination_only_from_2_79"),
    pytest.param("SHELVED_OFFLOADED", {"volumeId": VOLUME["FREE"], "tag": "t"},
                 "Tagged volume attachment is not supported for shelved-offloaded instances.",
                 id="a_tag_on_a_shelved_offloaded_server"),
    pytest.param("ACTIVE", {"volumeId": VOLUME["NO_TAGS"], "tag": "t"},
                 "Tagged volume attachment is not supported for this instance's compute host.",
                 id="the_conductor_cannot_tag_on_this_host"),
])
def test_refused(client, server, fields, message):
    assert_fault(attach(client, SERVER[server], HEADERS, **fields), 400, message)


def test_attach_with_a_tag_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # attach with a tag
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["FREE"], tag="my-disk")
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"] == {
                                                "id": VOLUME["FREE"],
                                                "serverId": SERVER["ACTIVE"],
                                                "volumeId": VOLUME["FREE"],
                                                "device": "/dev/vdf",
                                            }

    # the tag is shown from 2.70
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["FREE"]),
                      headers=at_version(HEADERS, "2.70"))
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["tag"] == "my-disk"

    # a shelved server from 2.20
    resp = attach(client, SERVER["SHELVED"], HEADERS, volumeId=VOLUME["FREE2"])
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdc"
