"""DELETE in the order of doc/source/contributor/contract.rst §3.4: server 404, policy, shelved
below 2.20 409,
Cinder volume 404, attachment 404, root disk 400, state/lock 409, compute
host down 409, Cinder begin_detaching 400; then 202 with no body.
"""

import re

import pytest

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import (
    UNKNOWN_SERVER,
    assert_fault,
    at_version,
    attachments_url,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.1")


def detach(client, server, volume, headers=HEADERS):
    return client.delete(attachments_url(server, volume), headers=headers)


@pytest.mark.parametrize("server, volume, status, message", [
    pytest.param(UNKNOWN_SERVER, VOLUME["UNKNOWN"], 404,
                 f"Instance {UNKNOWN_SERVER} could not be found.", id="unknown_server"),
    pytest.param(SERVER["OTHER_PROJECT"], VOLUME["DATA"], 404, None,
                 id="another_project_s_server"),
    pytest.param(SERVER["SHELVED"], VOLUME["UNKNOWN"], 409,
                 f"Cannot 'detach_volume' instance {SERVER['SHELVED']} while it is in vm_state "
                 "shelved", id="shelved_below_2_20_before_the_volume_lookup"),
    pytest.param(SERVER["LOCKED"], VOLUME["UNKNOWN"], 404,
                 f"Volume {VOLUME['UNKNOWN']} could not be found.",
                 id="unknown_volume_before_the_lock"),
    pytest.param(SERVER["LOCKED"], VOLUME["DATA"], 404,
                 f"Instance {SERVER['LOCKED']} is not attached to volume {VOLUME['DATA']}",
                 id="a_volume_of_another_server_before_the_lock"),
    pytest.param(SERVER["ACTIVE"], VOLUME["ROOT"], 400, "Cannot detach a root device volume",
                 id="the_root_volume"),
    pytest.param(SERVER["LOCKED"], VOLUME["LOCKED_DATA"], 409,
                 f"Instance {SERVER['LOCKED']} is locked", id="locked_server"),
    pytest.param(SERVER["REBOOTING"], VOLUME["REBOOTING_DATA"], 409,
                 f"Cannot 'detach_volume' instance {SERVER['REBOOTING']} while it is in "
                 "task_state rebooting", id="rebooting_server"),
    pytest.param(SERVER["HOST_DOWN"], VOLUME["DOWN_DATA"], 409,
                 f"Compute host compute-down of instance {SERVER['HOST_DOWN']} is not up; retry "
                 "when the service is back.", id="compute_host_down"),
    pytest.param(SERVER["SECOND"], VOLUME["DETACHING"], 400,
                 re.compile("Unable to detach volume"), id="cinder_refuses_begin_detaching"),
])
def test_refused(client, server, volume, status, message):
    assert_fault(detach(client, server, volume), status, message)


def test_detach_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # detach
    resp = detach(client, SERVER["ACTIVE"], VOLUME["DATA"])
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"
    assert resp.headers["openstack-api-version"] == "compute 2.1"

    # the detach action is recorded
    resp = client.get(f"/v2.1/servers/{SERVER['ACTIVE']}/os-instance-actions", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["instanceActions"][0]["action"] == "detach_volume"

    # a second detach while detaching
    assert_fault(detach(client, SERVER["ACTIVE"], VOLUME["DATA"]), 400)

    # a stopped server
    assert_fault(detach(client, SERVER["STOPPED"], VOLUME["STOPPED_DATA"]), 202)

    # a shelved server from 2.20
    resp = detach(client, SERVER["SHELVED"], VOLUME["SHELVED_DATA"], at_version(HEADERS, "2.20"))
    assert resp.status_code == 202, resp.text
