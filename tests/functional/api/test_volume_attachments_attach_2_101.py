"""POST at 2.101: the conductor is cast and the API answers 202 with an empty
body (not JSON) and the usual version headers; the synchronous checks still
answer 404/409/400, the conductor's refusals no longer reach the client.
"""

import re

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import attach, attachments_url, json_headers

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.101")


def test_attach_answers_202_with_no_body_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # attach answers 202 with no body
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["FREE"], tag="t",
                  delete_on_termination=True)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"
    assert resp.headers["openstack-api-version"] == "compute 2.101"
    assert resp.headers["x-openstack-nova-api-version"] == "2.101"
    assert re.search("^req-", resp.headers["x-openstack-request-id"])

    # the legacy header alone gives the same 202
    resp = client.post(
        attachments_url(SERVER["SECOND"]),
        json={"volumeAttachment": {"volumeId": VOLUME["FREE2"]}},
        headers={**HEADERS, "openstack-api-version": "",
                     "x-openstack-nova-api-version": "2.101"})
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"
    assert resp.headers["x-openstack-nova-api-version"] == "2.101"

    # the conductor refusal is not an HTTP error any more
    resp = client.post(
        attachments_url(SERVER["ACTIVE"]),
        json={"volumeAttachment": {"volumeId": VOLUME["TOO_MANY"]}},
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert resp.headers["content-length"] == "0"

    # unknown server is still 404
    resp = client.post(
        "/v2.1/servers/a77a0000-0000-4000-8000-0000000000ff/os-volume_attachments",
        json={"volumeAttachment": {"volumeId": VOLUME["FREE"]}},
        headers=HEADERS)
    assert resp.status_code == 404, resp.text

    # unknown volume is still 404
    resp = attach(client, SERVER["ACTIVE"], HEADERS, volumeId=VOLUME["UNKNOWN"])
    assert resp.status_code == 404, resp.text

    # locked is still 409
    resp = attach(client, SERVER["LOCKED"], HEADERS, volumeId=VOLUME["FREE"])
    assert resp.status_code == 409, resp.text

    # already attached is still 400
    resp = attach(client, SERVER["SECOND"], HEADERS, volumeId=VOLUME["DATA"])
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"volume {VOLUME['DATA']} is already attached to instances: {SERVER['ACTIVE']}")

