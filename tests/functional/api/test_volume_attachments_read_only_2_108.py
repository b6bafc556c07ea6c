"""Microversion 2.108 (volumesvc's own, doc/source/contributor/contract.rst §3.7):
read-only attachments. The version is served and echoed; at 2.108 the attach
body takes read_only (a JSON boolean) and every shown attachment says whether
it is read-only; at 2.107 the key is an unknown property (400) and is not
shown. read_only false is refused for a volume with Cinder's read-only flag.
What happens after the 202 (Cinder's mode, the read-only disk) is in
tests/functional/services/test_read_only_attachments.py.
"""

import re

from tests.functional.api.fixtures import VolumeAttachmentsProgressWorld as world
from tests.functional.api.journeys import (
    assert_advertised,
    at_version,
    attach,
    attachments_url,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.108")


def test_discovery_advertises_2_108_or_later(client):
    """Discovery advertises 2.108 or later."""
    assert_advertised(client, HEADERS, "2.108", r"^2\.(10[8-9]|1[1-9][0-9]|[2-9][0-9][0-9])$")


def test_at_2_108_an_attachment_says_it_is_read_write(client):
    """At 2.108 an attachment says it is read-write."""
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]), headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.108"
    assert len(resp.json["volumeAttachment"]) == 9
    assert resp.json["volumeAttachment"]["read_only"] is False
    assert resp.json["volumeAttachment"]["status"] == "attached"


def test_the_list_shows_read_only_on_every_entry(client):
    """The list shows read_only on every entry."""
    resp = client.get(attachments_url(SERVER["ACTIVE"]), headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachments"][0]["read_only"] is False
    assert resp.json["volumeAttachments"][1]["read_only"] is False


def test_at_2_107_the_attachment_has_no_read_only(client):
    """At 2.107 the attachment has no read_only."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
        headers=at_version(HEADERS, "2.107"))
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 8


def test_at_2_107_read_only_is_an_unknown_property(client):
    """At 2.107 read_only is an unknown property."""
    resp = attach(client, SERVER["ACTIVE"], at_version(HEADERS, "2.107"), volumeId=VOLUME["FREE"],
                  read_only=True)
    assert resp.status_code == 400, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.107"
    assert re.search(r"Additional properties are not allowed \('read_only' was unexpected\)",
                     str(resp.json["badRequest"]["message"]))


def test_read_only_must_be_a_json_boolean(client):
    """Read_only must be a JSON boolean."""
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["FREE"], read_only="yes")
    assert resp.status_code == 400, resp.text
    assert re.search("read_only", str(resp.json["badRequest"]["message"]))


def test_read_only_false_for_a_volume_with_cinder_s_read_only_flag_is_refused(client):
    """Read_only false for a volume with Cinder's read-only flag is refused."""
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["READ_ONLY"], read_only=False)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"Volume {VOLUME['READ_ONLY']} is read-only (Cinder's readonly flag): it can only be "
        "attached with read_only true.")


def test_a_retry_that_asks_read_only_for_a_read_write_attachment_keeps_the_400(client):
    """A retry that asks read-only for a read-write attachment keeps the 400."""
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["DATA"], tag="data",
                  read_only=True)
    assert resp.status_code == 400, resp.text
    assert re.search("is already attached", str(resp.json["badRequest"]["message"]))


def test_a_retry_that_gives_the_attachment_s_own_read_only_gets_it_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # a retry that gives the attachment's own read_only gets it
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["DATA"], tag="data",
                  read_only=False)
    assert resp.status_code == 202, resp.text
    assert resp.json["volumeAttachment"]["read_only"] is False
    assert len(resp.json["volumeAttachment"]) == 9

    # read_only true for the read-only volume is accepted
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["READ_ONLY"], read_only=True)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

    # read_only true for any volume is accepted
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["FREE"], read_only=True)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

