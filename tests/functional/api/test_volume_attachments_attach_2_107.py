"""Microversion 2.107 (volumesvc's own, doc/source/contributor/contract.rst §3.2):
a retried attach. The version is served and echoed; at 2.107 an attach of a
volume already attached to this server with the same tag (and device or
flag, when given) answers 202 with the attachment as GET-one shows it, even
on a locked server, while a new attach is still the empty 202 of 2.101; a
request that differs keeps the 400, and at 2.106 the same retry is the 400.
"""

import re

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import (
    assert_advertised,
    assert_fault,
    at_version,
    attach,
    attachments_url,
    get_list,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.107")


def test_discovery_advertises_2_107_or_later(client):
    """Discovery advertises 2.107 or later."""
    assert_advertised(client, HEADERS, "2.107", r"^2\.(10[7-9]|1[1-9][0-9]|[2-9][0-9][0-9])$")


def test_at_2_106_the_retry_is_the_400_it_always_was(client):
    """At 2.106 the retry is the 400 it always was."""
    resp = attach(client, SERVER["ACTIVE"], at_version(HEADERS, "2.106"),
                  volumeId=VOLUME["DATA"], tag="data")
    assert resp.status_code == 400, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.106"
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['DATA']} is already attached to instances: {SERVER['ACTIVE']}")


def test_at_2_107_the_retry_answers_202_with_the_existing_attachment_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # at 2.107 the retry answers 202 with the existing attachment
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["DATA"], tag="data")
    assert resp.status_code == 202, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.107"
    assert resp.headers["x-openstack-nova-api-version"] == "2.107"
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["DATA"]
    assert resp.json["volumeAttachment"]["serverId"] == SERVER["ACTIVE"]
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdb"
    assert resp.json["volumeAttachment"]["tag"] == "data"
    assert resp.json["volumeAttachment"]["delete_on_termination"] is False
    assert resp.json["volumeAttachment"]["status"] == "attached"
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["volumeAttachment"]["attachment_id"]))

    # the answer is the body GET-one gives
    resp = get_list(client, attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
                    HEADERS, "volumeAttachment", 8)
    assert resp.json["volumeAttachment"]["status"] == "attached"

    # the same device and flag given are the same request
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["DATA"], tag="data",
                  device="/dev/vdb", delete_on_termination="false")
    assert resp.status_code == 202, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdb"

    for step, server, fields in [
        ("another tag is another request and keeps the 400", "ACTIVE", {}),
        ("another device keeps the 400", "ACTIVE", {"tag": "data", "device": "/dev/vdz"}),
        ("another flag keeps the 400", "ACTIVE", {"tag": "data", "delete_on_termination": True}),
        ("a volume attached to another server keeps the 400", "SECOND", {"tag": "data"}),
    ]:
        resp = attach(client, SERVER[server], HEADERS, volumeId=VOLUME["DATA"], **fields)
        assert_fault(resp, 400, step=step)

    # a retry on a locked server still gets its attachment
    resp = attach(client, SERVER["LOCKED"], HEADERS, volumeId=VOLUME["LOCKED_DATA"])
    assert resp.status_code == 202, resp.text
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["LOCKED_DATA"]

    # a new attach is still the empty 202
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["FREE"])
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

