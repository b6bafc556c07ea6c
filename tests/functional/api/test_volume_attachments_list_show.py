"""GET list and GET one of os-volume_attachments: every representation of
doc/source/contributor/contract.rst §3.1
(exact key counts), local disks never listed, legacy BDMs hidden from 2.89,
404 messages, project isolation and the 2.75/2.102 query rules.
"""

import re

import pytest

from tests.functional.api.fixtures import VolumeAttachmentsWorld as world
from tests.functional.api.journeys import (
    UNKNOWN_SERVER,
    assert_fault,
    at_version,
    attachments_url,
    get_list,
    json_headers,
)

SERVER = world.SERVER
VOLUME = world.VOLUME
HEADERS = json_headers("2.1", content_type=False)


def test_list_at_2_1_leaves_out_the_local_disk(client):
    """List at 2.1 leaves out the local disk."""
    resp = get_list(client, attachments_url(SERVER["ACTIVE"]), HEADERS, "volumeAttachments", 5)
    assert resp.json["volumeAttachments"][0] == {
                                                    "id": VOLUME["ROOT"],
                                                    "volumeId": VOLUME["ROOT"],
                                                    "serverId": SERVER["ACTIVE"],
                                                    "device": "/dev/vda",
                                                }
    assert resp.json["volumeAttachments"][2]["volumeId"] == VOLUME["LEGACY"]


def test_list_with_the_project_id_in_the_url(client):
    """List with the project id in the URL."""
    resp = client.get(
        f"/v2.1/7e57000000000000000000000000a11c/servers/{SERVER['ACTIVE']}/os-volume_attachments",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachments"]) == 5


def test_show_at_2_69_is_still_the_2_1_shape(client):
    """Show at 2.69 is still the 2.1 shape."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
        headers=at_version(HEADERS, "2.69"))
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 4


def test_a_null_tag_is_shown_at_2_70(client):
    """A null tag is shown at 2.70."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["ROOT"]),
        headers=at_version(HEADERS, "2.70"))
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["tag"] is None
    assert len(resp.json["volumeAttachment"]) == 5


def test_show_at_2_89_has_no_id_but_attachment_id_and_bdm_uuid(client):
    """Show at 2.89 has no id but attachment_id and bdm_uuid."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["DATA"]),
        headers=at_version(HEADERS, "2.89"))
    assert resp.status_code == 200, resp.text
    assert len(resp.json["volumeAttachment"]) == 7
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["DATA"]
    assert resp.json["volumeAttachment"]["serverId"] == SERVER["ACTIVE"]
    assert resp.json["volumeAttachment"]["device"] == "/dev/vdb"
    assert resp.json["volumeAttachment"]["tag"] == "data"
    assert resp.json["volumeAttachment"]["delete_on_termination"] is False
    assert re.search("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                     str(resp.json["volumeAttachment"]["attachment_id"]))
    assert re.search("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                     str(resp.json["volumeAttachment"]["bdm_uuid"]))


def test_list_at_2_89_leaves_out_the_legacy_attachment(client):
    """List at 2.89 leaves out the legacy attachment."""
    resp = get_list(client, attachments_url(SERVER["ACTIVE"]),
                    at_version(HEADERS, "2.89"), "volumeAttachments", 4)
    assert resp.json["volumeAttachments"][2]["volumeId"] == VOLUME["MIGRATING"]


def test_a_legacy_attachment_is_shown_below_2_89(client):
    """A legacy attachment is shown below 2.89."""
    resp = client.get(
        attachments_url(SERVER["ACTIVE"], VOLUME["LEGACY"]),
        headers=at_version(HEADERS, "2.88"))
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachment"]["volumeId"] == VOLUME["LEGACY"]


def test_an_admin_sees_another_project_s_attachments(client):
    """An admin sees another project's attachments."""
    resp = client.get(
        attachments_url(SERVER["OTHER_PROJECT"]),
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text
    assert resp.json["volumeAttachments"] == []


def test_limit_and_offset(client):
    """Limit and offset."""
    resp = client.get(
        f"/v2.1/servers/{SERVER['ACTIVE']}/os-volume_attachments?limit=2&offset=2",
        headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert [item["volumeId"] for item in resp.json["volumeAttachments"]] == [
                                                                                VOLUME["DATA"],
                                                                                VOLUME["LEGACY"],
                                                                            ]


def shown(volume, device, **more):
    return {"id": VOLUME[volume], "volumeId": VOLUME[volume], "serverId": SERVER["ACTIVE"],
            "device": device, **more}


@pytest.mark.parametrize("volume, version, expected", [
    pytest.param("DATA", "2.1", shown("DATA", "/dev/vdb"), id="show_at_2_1"),
    pytest.param("DATA", "2.70", shown("DATA", "/dev/vdb", tag="data"),
                 id="show_at_2_70_adds_the_tag"),
    pytest.param("ROOT", "2.79", shown("ROOT", "/dev/vda", tag=None, delete_on_termination=True),
                 id="show_at_2_79_adds_delete_on_termination"),
])
def test_show(client, volume, version, expected):
    resp = client.get(attachments_url(SERVER["ACTIVE"], VOLUME[volume]),
                      headers=at_version(HEADERS, version))
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == f"compute {version}"
    assert resp.json["volumeAttachment"] == expected


def not_attached(volume):
    return f"Instance {SERVER['ACTIVE']} is not attached to volume {VOLUME[volume]}"


@pytest.mark.parametrize("url, headers, status, message", [
    pytest.param(attachments_url(SERVER["ACTIVE"], VOLUME["LEGACY"]), at_version(HEADERS, "2.89"),
                 404, not_attached("LEGACY"), id="a_legacy_attachment_is_not_found_at_2_89"),
    pytest.param(attachments_url(SERVER["ACTIVE"], VOLUME["FREE"]), HEADERS, 404,
                 not_attached("FREE"), id="a_volume_that_is_not_attached"),
    pytest.param(attachments_url(SERVER["OTHER_PROJECT"]), HEADERS, 404,
                 f"Instance {SERVER['OTHER_PROJECT']} could not be found.",
                 id="another_project_s_server_is_not_found"),
    pytest.param(attachments_url(UNKNOWN_SERVER), HEADERS, 404,
                 f"Instance {UNKNOWN_SERVER} could not be found.", id="unknown_server"),
    pytest.param(attachments_url(SERVER["ACTIVE"], query="?limit=-1"), HEADERS, 400, None,
                 id="a_negative_limit"),
    pytest.param(attachments_url(SERVER["ACTIVE"], query="?foo=bar"), at_version(HEADERS, "2.74"),
                 200, None, id="unknown_query_keys_are_ignored_before_2_75"),
    pytest.param(attachments_url(SERVER["ACTIVE"], query="?foo=bar"), at_version(HEADERS, "2.75"),
                 400, re.compile("Additional properties are not allowed"),
                 id="unknown_query_keys_give_400_from_2_75"),
    pytest.param(attachments_url(SERVER["ACTIVE"], VOLUME["DATA"], "?foo=bar"),
                 at_version(HEADERS, "2.102"), 400, None,
                 id="unknown_query_keys_on_show_give_400_from_2_102"),
    pytest.param(attachments_url(SERVER["ACTIVE"]), {**HEADERS, "x-auth-token": ""}, 401, None,
                 id="no_token"),
])
def test_status(client, url, headers, status, message):
    assert_fault(client.get(url, headers=headers), status, message)
