"""POST os-volume_attachments at 2.1: the synchronous checks in Nova's order
(server 404, volume 404, lock/state 409, device 400, already attached 400,
multiattach below 2.60 400), then a 200 with the reserved device.
"""

import re

import pytest

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import (
    UNKNOWN_SERVER,
    as_admin,
    assert_fault,
    attachments_url,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.1")


def attach(client, server, headers=HEADERS, **fields):
    return client.post(attachments_url(server), json={"volumeAttachment": fields},
                       headers=headers)


@pytest.mark.parametrize("server, volume, status, message", [
    pytest.param(UNKNOWN_SERVER, VOLUME["UNKNOWN"], 404,
                 f"Instance {UNKNOWN_SERVER} could not be found.", id="unknown_server"),
    pytest.param(SERVER["OTHER_PROJECT"], VOLUME["FREE"], 404, None,
                 id="another_project_s_server"),
    pytest.param(SERVER["LOCKED"], VOLUME["UNKNOWN"], 404,
                 f"Volume {VOLUME['UNKNOWN']} could not be found.",
                 id="unknown_volume_before_the_lock"),
    pytest.param(SERVER["LOCKED"], VOLUME["FREE"], 409, f"Instance {SERVER['LOCKED']} is locked",
                 id="locked_server"),
])
def test_refused(client, server, volume, status, message):
    assert_fault(attach(client, server, volumeId=volume), status, message)


def cannot(server, state):
    return f"Cannot 'attach_volume' instance {SERVER[server]} while it is in {state}"


def attached_to(volume, server):
    return f"volume {VOLUME[volume]} is already attached to instances: {SERVER[server]}"


# (step, server, body, status, message: text, pattern or None), in journey order.
REFUSALS = [
    ("building server", "BUILDING", {"volumeId": VOLUME["FREE"]}, 409,
     cannot("BUILDING", "vm_state building")),
    ("rebooting server", "REBOOTING", {"volumeId": VOLUME["FREE"]}, 409,
     cannot("REBOOTING", "task_state rebooting")),
    ("error server", "ERROR", {"volumeId": VOLUME["FREE"]}, 409,
     cannot("ERROR", "vm_state error")),
    ("suspended server", "SUSPENDED", {"volumeId": VOLUME["FREE"]}, 409, None),
    ("never launched", "NOT_LAUNCHED", {"volumeId": VOLUME["FREE"]}, 409,
     cannot("NOT_LAUNCHED", "launched_at None")),
    ("shelved needs 2.20", "SHELVED", {"volumeId": VOLUME["FREE"]}, 409,
     cannot("SHELVED", "vm_state shelved")),
    ("shelved offloaded needs 2.20", "SHELVED_OFFLOADED", {"volumeId": VOLUME["FREE"]}, 409,
     cannot("SHELVED_OFFLOADED", "vm_state shelved_offloaded")),
    ("a device that is not a device name", "ACTIVE",
     {"volumeId": VOLUME["FREE"], "device": "vdb"}, 400,
     re.compile(r"Invalid input for field\/attribute volumeAttachment\/device")),
    ("volumeId must be a uuid", "ACTIVE", {"volumeId": "not-a-uuid"}, 400, None),
    ("volumeId is required", "ACTIVE", {"device": "/dev/vdb"}, 400, None),
    ("tag only from 2.49", "ACTIVE", {"volumeId": VOLUME["FREE"], "tag": "t"}, 400,
     re.compile("Additional properties are not allowed")),
]
ATTACHED = [
    ("a volume attached to another server", "SECOND", "DATA", attached_to("DATA", "ACTIVE")),
    ("a volume attached to this server", "ACTIVE", "DATA", attached_to("DATA", "ACTIVE")),
    ("a multiattach volume already on this server", "SECOND", "SHARED",
     attached_to("SHARED", "SECOND")),
    ("a multiattach volume below 2.60", "ACTIVE", "MULTI",
     "Multiattach volumes are only supported starting with compute API version 2.60."),
]


def test_an_admin_may_attach_to_a_locked_server_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # an admin may attach to a locked server
    resp = attach(client, SERVER["LOCKED"], as_admin(HEADERS), volumeId=VOLUME["FREE2"])
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdc"

    for step, server, fields, status, message in REFUSALS:
        assert_fault(attach(client, SERVER[server], **fields), status, message, step=step)

    # no other top-level key
    resp = client.post(
        attachments_url(SERVER["ACTIVE"]),
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}, "extra": 1},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text

    for step, server, volume, message in ATTACHED:
        assert_fault(attach(client, SERVER[server], volumeId=VOLUME[volume]), 400, message,
                     step=step)

    # attach
    resp = attach(client, SERVER["ACTIVE"], volumeId=VOLUME["FREE"], device="/dev/vdb")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers["openstack-api-version"] == "compute 2.1"
    assert resp.json["volumeAttachment"] == {
                                                "id": VOLUME["FREE"],
                                                "serverId": SERVER["ACTIVE"],
                                                "volumeId": VOLUME["FREE"],
                                                "device": "/dev/vdf",
                                            }

    # the new attachment is listed with its device
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["FREE"]), headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdf"

    # attaching it again
    assert_fault(attach(client, SERVER["ACTIVE"], volumeId=VOLUME["FREE"]), 400,
                 attached_to("FREE", "ACTIVE"))

    # a stopped server
    assert_fault(attach(client, SERVER["STOPPED"], volumeId=VOLUME["TOO_MANY"], device=None), 403,
                 "The maximum allowed number of disk devices (2) to attach to a single instance "
                 "has been exceeded.")

    # the conductor finds the device in use
    assert_fault(attach(client, SERVER["PAUSED"], volumeId=VOLUME["DEVICE_BUSY"]), 409,
                 "The supplied device path (/dev/vdz) is in use.")
