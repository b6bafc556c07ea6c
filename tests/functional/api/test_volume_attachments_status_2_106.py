"""Microversion 2.106 (volumesvc's own, doc/source/contributor/contract.rst §3.6):
status and fault of volume attachments. The version is served and echoed;
at 2.106 every listed or shown attachment has a status (no recorded state
is "attached"), a failed attach is listed as "error" with its fault until a
DELETE forgets it, and a detach on a compute that reports progress shows
"detaching"; at 2.105 the same requests show the 2.89 shape and no failed
attach. A POST at 2.106 is still the 202 of 2.101.
"""

import re

from tests.functional.api.fixtures import VolumeAttachmentsProgressWorld as world
from tests.functional.api.journeys import (
    assert_advertised,
    at_version,
    attach,
    attachments_url,
    get_list,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.106")


def test_discovery_advertises_2_106_or_later(client):
    """Discovery advertises 2.106 or later."""
    assert_advertised(client, HEADERS, "2.106", r"^2\.(10[6-9]|1[1-9][0-9]|[2-9][0-9][0-9])$",
                      min_version="2.1")


def test_list_at_2_105_has_the_2_89_keys_and_no_failed_attach(client):
    """List at 2.105 has the 2.89 keys and no failed attach."""
    resp = client.get(attachments_url(SERVER["ACTIVE"]), headers=at_version(HEADERS, "2.105"))
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.105"
    assert len(resp.json["volumeAttachments"]) == 4
    assert resp.json["volumeAttachments"][1]["volumeId"] == VOLUME["DATA"]
    assert len(resp.json["volumeAttachments"][1]) == 7


def test_list_at_2_106_adds_a_status_and_lists_the_failed_attach_last(client):
    """List at 2.106 adds a status and lists the failed attach last."""
    resp = get_list(client, attachments_url(SERVER["ACTIVE"]), HEADERS, "volumeAttachments", 5)
    assert resp.json["volumeAttachments"][1]["volumeId"] == VOLUME["DATA"]
    assert resp.json["volumeAttachments"][1]["status"] == "attached"
    assert len(resp.json["volumeAttachments"][1]) == 8
    assert resp.json["volumeAttachments"][4]["volumeId"] == VOLUME["FREE2"]
    assert resp.json["volumeAttachments"][4]["status"] == "error"
    assert resp.json["volumeAttachments"][4]["attachment_id"] is None
    assert resp.json["volumeAttachments"][4]["fault"]["code"] == 400
    assert resp.json["volumeAttachments"][4]["fault"]["message"] == (
        f"Volume {VOLUME['FREE2']} was refused by Cinder.")
    assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$",
                     str(resp.json["volumeAttachments"][4]["fault"]["created"]))


def test_show_at_2_105_has_no_status(client):
    """Show at 2.105 has no status."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
        headers=at_version(HEADERS, "2.105"))
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 7
    assert resp.json["volumeAttachment"]["tag"] == "data"


def test_show_at_2_106_has_the_status_and_no_fault(client):
    """Show at 2.106 has the status and no fault."""
    resp = get_list(client, attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
                    HEADERS, "volumeAttachment", 8)
    assert resp.json["volumeAttachment"]["status"] == "attached"


def test_the_failed_attach_is_not_there_at_2_105(client):
    """The failed attach is not there at 2.105."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["FREE2"]),
        headers=at_version(HEADERS, "2.105"))
    assert resp.status_code == 404, resp.text


def test_the_failed_attach_can_be_shown_at_2_106(client):
    """The failed attach can be shown at 2.106."""
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["FREE2"]), headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["status"] == "error"
    assert resp.json["volumeAttachment"]["fault"]["code"] == 400


def test_detach_at_2_106_answers_202_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # detach at 2.106 answers 202
    resp = client.delete(attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]), headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # the detached volume is shown detaching
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]), headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["status"] == "detaching"

    # below 2.106 the detaching volume is shown without a status
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
        headers=at_version(HEADERS, "2.105"))
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 7

    # a DELETE of the failed attach forgets the record
    resp = client.delete(attachments_url(SERVER["ACTIVE"], VOLUME["FREE2"]), headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # the forgotten failed attach is gone
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["FREE2"]), headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # attach at 2.106 answers 202 with no body, as from 2.101
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["FREE"])
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"
    assert resp.headers["openstack-api-version"] == "compute 2.106"

