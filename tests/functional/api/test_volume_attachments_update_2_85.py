"""PUT at 2.85 (and the swap-only form below it): the same volumeId updates
delete_on_termination (member), echoed fields must not change; another
volumeId is a swap (service or admin), only of a volume Cinder is migrating
(409 otherwise). A swap that is accepted: test_volume_attachments.py.
"""


from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import (
    as_admin,
    assert_fault,
    at_version,
    attachments_url,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.85")


ADMIN = as_admin(HEADERS)
UNKNOWN_OLD = "b01e0000-0000-4000-8000-0000000000fe"


def update(client, server, volume, headers=HEADERS, **fields):
    """PUT of the attachment of ``volume`` (id) on ``server`` (name)."""
    return client.put(attachments_url(SERVER[server], volume),
                      json={"volumeAttachment": fields}, headers=headers)


# (step, server, attached volume id, body, headers, status, message or None), in journey order.
REFUSALS = [
    ("device is not mutable", "ACTIVE", VOLUME["DATA"],
     {"volumeId": VOLUME["DATA"], "device": "/dev/vdq"}, HEADERS, 400,
     "The device property is not mutable"),
    ("tag is not mutable", "ACTIVE", VOLUME["DATA"],
     {"volumeId": VOLUME["DATA"], "tag": "other"}, HEADERS, 400,
     "The tag property is not mutable"),
    ("serverId is not mutable", "ACTIVE", VOLUME["DATA"],
     {"volumeId": VOLUME["DATA"], "serverId": SERVER["SECOND"]}, HEADERS, 400,
     "The serverId property is not mutable"),
    ("a volume that is not attached", "ACTIVE", VOLUME["FREE"],
     {"volumeId": VOLUME["FREE"], "delete_on_termination": True}, HEADERS, 404,
     f"Instance {SERVER['ACTIVE']} is not attached to volume {VOLUME['FREE']}"),
    ("unknown keys", "ACTIVE", VOLUME["DATA"], {"volumeId": VOLUME["DATA"], "size": 3}, HEADERS,
     400, None),
    ("a swap needs the swap policy", "ACTIVE", VOLUME["DATA"], {"volumeId": VOLUME["FREE"]},
     HEADERS, 403,
     "Policy doesn't allow os_compute_api:os-volumes-attachments:swap to be performed."),
    ("swap of an unknown old volume", "ACTIVE", UNKNOWN_OLD, {"volumeId": VOLUME["FREE"]}, ADMIN,
     404, f"Volume {UNKNOWN_OLD} could not be found."),
    ("swap to an unknown new volume", "ACTIVE", VOLUME["DATA"], {"volumeId": VOLUME["UNKNOWN"]},
     ADMIN, 400, f"Volume {VOLUME['UNKNOWN']} could not be found."),
    ("swap of a volume the server does not have", "ACTIVE", VOLUME["FREE2"],
     {"volumeId": VOLUME["FREE"]}, ADMIN, 404, None),
    ("swap on a stopped server", "STOPPED", VOLUME["STOPPED_DATA"], {"volumeId": VOLUME["FREE"]},
     ADMIN, 409,
     f"Cannot 'swap_volume' instance {SERVER['STOPPED']} while it is in vm_state stopped"),
    ("swap of a multiattach volume with two read/write attachments", "ACTIVE", VOLUME["SHARED"],
     {"volumeId": VOLUME["FREE"]}, ADMIN, 400,
     "Swapping multi-attach volumes with more than one read/write attachment is not supported."),
    ("swap of a volume Cinder is not migrating", "ACTIVE", VOLUME["DATA"],
     {"volumeId": VOLUME["FREE"]}, ADMIN, 409,
     f"Volume {VOLUME['DATA']} is not being migrated: the volume of an attachment is only "
     "swapped while Cinder migrates or retypes it."),
    ("swap to a volume that is attached already", "ACTIVE", VOLUME["MIGRATING"],
     {"volumeId": VOLUME["LEGACY"]}, ADMIN, 400,
     "Invalid volume for swap: New volume must be detached in order to swap."),
    ("below 2.85 every PUT is a swap", "ACTIVE", VOLUME["DATA"], {"volumeId": VOLUME["DATA"]},
     at_version(HEADERS, "2.84"), 403, None),
    ("below 2.85 only volumeId is accepted", "ACTIVE", VOLUME["DATA"],
     {"volumeId": VOLUME["DATA"], "delete_on_termination": True}, at_version(ADMIN, "2.84"), 400,
     None),
]


def test_update_delete_on_termination_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # update delete_on_termination
    resp = update(client, "ACTIVE", VOLUME["DATA"], volumeId=VOLUME["DATA"], id=VOLUME["DATA"],
                  serverId=SERVER["ACTIVE"], device="/dev/vdb", tag="data",
                  delete_on_termination=True)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

    # the flag is shown
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]), headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["delete_on_termination"] is True

    # on a locked server too (no state gate)
    resp = update(client, "LOCKED", VOLUME["LOCKED_DATA"], volumeId=VOLUME["LOCKED_DATA"],
                  delete_on_termination="on")
    assert resp.status_code == 202, resp.text

    for step, server, volume, fields, headers, status, message in REFUSALS:
        assert_fault(update(client, server, volume, headers, **fields), status, message,
                     step=step)
