"""Microversion 2.105 (volumesvc's own, doc/source/contributor/contract.rst §7):
a volume-extended event for a volume Cinder holds ``extending`` completes
the extend in the compute. The version is served and echoed; at 2.105 the
compute grows the disk to the target size Cinder shows and completes, or
completes with error when no target is shown (the reason is in the event's
instance action); at 2.104 the same event keeps the 2.51 flow and never
reads the target. Events are answered before the compute acts: the action
is polled until its event has finished.
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import EXTEND_HIDDEN, EXTEND_SHOWN
from tests.functional.api.journeys import assert_advertised, at_version, json_headers

HEADERS = json_headers("2.105", "admin:admin")


@pytest.fixture
def stack():
    """(client, uuid of the ACTIVE server) of the running stack."""
    with fixtures.open_extend_stack() as (running, server):
        yield running.app.test_client(), server


def test_discovery_advertises_2_105_or_later(stack):
    """Discovery advertises 2.105 or later."""
    client, _server = stack
    assert_advertised(client, HEADERS, "2.105", r"^2\.(10[5-9]|1[1-9][0-9]|[2-9][0-9][0-9])$",
                      min_version="2.1")


def volume_extended(client, server, volume, version="2.105"):
    """POST of one volume-extended event for ``volume`` on ``server``."""
    event = {"name": "volume-extended", "server_uuid": server, "tag": volume}
    return client.post("/v2.1/os-server-external-events", json={"events": [event]},
                       headers=at_version(HEADERS, version))


def wait_for_extend(client, server, answer, result, action=True, details=None):
    """Polls the instance action of the event ``answer`` until its compute event is
    ``result`` (the action extend_volume when ``action``, details matching ``details``).
    """
    request_id = answer.headers['x-openstack-request-id']

    def check():
        resp = client.get(
            f"/v2.1/servers/{server}/os-instance-actions/{request_id}",
            headers=HEADERS)
        assert resp.status_code == 200, resp.text
        if action:
            assert resp.json["instanceAction"]["action"] == "extend_volume"
        assert resp.json["instanceAction"]["events"][0]["event"] == "compute_extend_volume"
        assert resp.json["instanceAction"]["events"][0]["result"] == result
        if details is not None:
            assert re.search(details, str(resp.json["instanceAction"]["events"][0]["details"]))
        return resp

    return fixtures.poll(check, count=100, delay=0.1)


def test_at_2_104_a_volume_extended_event_keeps_the_2_51_flow_onwards(stack):
    """The journey from here on, in order: each step sees what the earlier ones did.

    The compute acts after the event is answered: each event's instance
    action is polled until its event has finished.
    """
    client, server = stack
    # at 2.104 a volume-extended event keeps the 2.51 flow
    resp = volume_extended(client, server, EXTEND_HIDDEN, "2.104")
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.104"
    assert resp.json["events"][0]["code"] == 200
    assert resp.json["events"][0]["status"] == "completed"
    hidden_at_2_104 = resp

    # the 2.104 event succeeded without reading the hidden target
    wait_for_extend(client, server, hidden_at_2_104, "Success")

    # at 2.105 the same volume without a shown target completes with error
    resp = volume_extended(client, server, EXTEND_HIDDEN)
    assert resp.status_code == 200, resp.text
    assert resp.json["events"][0]["code"] == 200
    assert resp.json["events"][0]["status"] == "completed"
    hidden_at_2_105 = resp

    # the 2.105 event says why it failed
    wait_for_extend(client, server, hidden_at_2_105, "Error", details="extend_new_size")

    # at 2.105 a volume with its target shown is grown and completed
    resp = volume_extended(client, server, EXTEND_SHOWN)
    assert resp.status_code == 200, resp.text
    assert resp.json["events"][0]["code"] == 200
    shown_at_2_105 = resp

    # the completed extend is a successful event
    wait_for_extend(client, server, shown_at_2_105, "Success", action=False)

    # volume-extended is still refused below 2.51
    resp = volume_extended(client, server, EXTEND_SHOWN, "2.50")
    assert resp.status_code == 400, resp.text
