"""A multiattach volume and a server on a host whose driver lacks
supports_multiattach: refused up front with 409 at every version that
allows multiattach (doc/source/contributor/contract.rst §3.5); below 2.60 the version refusal
(400) comes first. A single-attach volume still attaches there.
"""

import re

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import at_version, attachments_url

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "alice:7e57000000000000000000000000a11c",
}


def test_below_2_60_the_microversion_refusal_comes_first(client):
    """Below 2.60 the microversion refusal comes first."""
    resp = client.post(
        attachments_url(SERVER["NO_MULTIATTACH_HOST"]),
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=at_version(HEADERS, "2.59"))
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Multiattach volumes are only supported starting with compute API version 2.60.")


def test_at_2_60_the_host_is_refused_up_front(client):
    """At 2.60 the host is refused up front."""
    resp = client.post(
        attachments_url(SERVER["NO_MULTIATTACH_HOST"]),
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=at_version(HEADERS, "2.60"))
    assert resp.status_code == 409, resp.text
    assert resp.headers["openstack-error-code"] == "volumesvc.attachment.conflict"
    assert resp.json["conflictingRequest"]["code"] == 409
    assert resp.json["conflictingRequest"]["message"] == (
        f"Volume {VOLUME['MULTI']} is multiattach, but server {SERVER['NO_MULTIATTACH_HOST']} is "
        "on host nomulti-compute, whose compute driver cannot share a disk between servers "
        "(capability supports_multiattach is off).")


def test_at_2_100_too(client):
    """At 2.100 too."""
    resp = client.post(
        attachments_url(SERVER["NO_MULTIATTACH_HOST"]),
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=at_version(HEADERS, "2.100"))
    assert resp.status_code == 409, resp.text
    assert re.search("supports_multiattach is off",
                     str(resp.json["conflictingRequest"]["message"]))


def test_and_at_2_101_where_other_conductor_refusals_are_only_events_it_is_still_a_4(client):
    """And at 2.101, where other conductor refusals are only events, it is still a 409."""
    resp = client.post(
        attachments_url(SERVER["NO_MULTIATTACH_HOST"]),
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=at_version(HEADERS, "2.101"))
    assert resp.status_code == 409, resp.text
    assert re.search("supports_multiattach is off",
                     str(resp.json["conflictingRequest"]["message"]))


def test_nothing_was_attached_to_that_server(client):
    """Nothing was attached to that server."""
    resp = client.get(
        attachments_url(SERVER["NO_MULTIATTACH_HOST"]),
        headers=at_version(HEADERS, "2.89"))
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachments"] == []


def test_a_single_attach_volume_attaches_on_that_host_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # a single-attach volume attaches on that host
    resp = client.post(
        attachments_url(SERVER["NO_MULTIATTACH_HOST"]),
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=at_version(HEADERS, "2.60"))
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["FREE"]

    # the multiattach volume still attaches to a server on a capable host
    resp = client.post(
        attachments_url(SERVER["ACTIVE"]),
        json={"volumeAttachment": {"volumeId": VOLUME["MULTI"]}},
        headers=at_version(HEADERS, "2.101"))
    assert resp.status_code == 202, resp.text

