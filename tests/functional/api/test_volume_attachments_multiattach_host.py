"""A multiattach volume and a server on a host whose driver lacks
supports_multiattach: refused up front with 409 at every version that
allows multiattach (doc/source/contributor/contract.rst §3.5); below 2.60 the version refusal
(400) comes first. A single-attach volume still attaches there.
"""

import re

import pytest

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import assert_fault, at_version, attach, attachments_url

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "alice:7e57000000000000000000000000a11c",
}


def attach_multi(client, version):
    return attach(client, SERVER["NO_MULTIATTACH_HOST"], at_version(HEADERS, version),
                  volumeId=VOLUME["MULTI"])


def test_below_2_60_the_microversion_refusal_comes_first(client):
    """Below 2.60 the microversion refusal comes first."""
    assert_fault(attach_multi(client, "2.59"), 400,
                 "Multiattach volumes are only supported starting with compute API version 2.60.")


def test_at_2_60_the_host_is_refused_up_front(client):
    """At 2.60 the host is refused up front."""
    resp = attach_multi(client, "2.60")
    assert resp.status_code == 409, resp.text
    assert resp.headers["openstack-error-code"] == "volumesvc.attachment.conflict"
    assert resp.json["conflictingRequest"]["code"] == 409
    assert resp.json["conflictingRequest"]["message"] == (
        f"Volume {VOLUME['MULTI']} is multiattach, but server {SERVER['NO_MULTIATTACH_HOST']} is "
        "on host nomulti-compute, whose compute driver cannot share a disk between servers "
        "(capability supports_multiattach is off).")


@pytest.mark.parametrize("version", [
    pytest.param("2.100", id="at_2_100_too"),
    # where other conductor refusals are only events
    pytest.param("2.101", id="and_at_2_101_it_is_still_a_409"),
])
def test_still_refused(client, version):
    assert_fault(attach_multi(client, version), 409, re.compile("supports_multiattach is off"))


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
    resp = attach(client, SERVER["NO_MULTIATTACH_HOST"], at_version(HEADERS, "2.60"),
                  volumeId=VOLUME["FREE"])
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["FREE"]

    # the multiattach volume still attaches to a server on a capable host
    resp = attach(client, SERVER["ACTIVE"], at_version(HEADERS, "2.101"), volumeId=VOLUME["MULTI"])
    assert resp.status_code == 202, resp.text

