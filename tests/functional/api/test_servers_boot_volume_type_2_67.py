"""Boot from volume with BDM volume_type (2.67): by id stored as name, every refusal of
doc/source/contributor/contract.rst §4.2.
"""

import re

from tests.functional.api.fixtures import ServersWorld as world
from tests.functional.api.journeys import json_headers

HEADERS = json_headers("2.67")


def test_blank_volume_with_a_type_given_by_id_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # blank volume with a type given by id
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "typed",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "image",
                        "uuid": world.IMAGE,
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 4,
                        "volume_type": world.TYPE_FAST,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text
    assert re.search("servers/[0-9a-f-]{36}$", resp.headers["location"])
    assert re.search("^[0-9a-f-]{36}$", str(resp.json["server"]["id"]))
    assert resp.json["server"]["OS-DCF:diskConfig"] == "MANUAL"
    assert resp.json["server"]["security_groups"][0]["name"] == "default"
    assert re.search("^.{12}$", str(resp.json["server"]["adminPass"]))
    assert resp.json["server"]["links"][0]["rel"] == "self"

    # the typed server is building with no image
    prev = resp
    resp = client.get(prev.headers["Location"], headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["server"]["status"] == "BUILD"
    assert resp.json["server"]["image"] == ""
    assert resp.json["server"]["OS-EXT-STS:task_state"] == "scheduling"
    assert resp.json["server"]["OS-EXT-STS:vm_state"] == "building"
    assert resp.json["server"]["OS-EXT-STS:power_state"] == 0
    assert resp.json["server"]["flavor"]["original_name"] == "test.small"
    assert resp.json["server"]["name"] == "typed"
    assert resp.json["server"]["hostId"] == ""

    # a type by name is fine too
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "typed-by-name",
                "flavorRef": "101",
                "networks": "auto",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "volume_type": "fast",
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # empty volume_type is ignored
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "untyped",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "volume_type": "",
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # unknown volume type
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "bad-type",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "volume_type": "gold",
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Volume type gold could not be found."

    # volume type with a local destination
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "local-type",
                "flavorRef": "102",
                "imageRef": world.IMAGE,
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "local",
                        "boot_index": -1,
                        "volume_size": 1,
                        "volume_type": "fast",
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: Specifying a volume_type with destination_type=local "
        "is not supported.")

    # volume type with an existing volume
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "existing-type",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_BOOT,
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_type": "fast",
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: Specifying volume type to existing volume is not "
        "supported.")

    # volume_type is unknown before 2.67
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "too-early",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "volume_type": "fast",
                    },
                ],
            },
        },
        headers={**HEADERS, "openstack-api-version": "compute 2.66"})
    assert resp.status_code == 400, resp.text
    assert re.search(r"Additional properties are not allowed \('volume_type' was unexpected\)",
                     str(resp.json["badRequest"]["message"]))

    # boot from a volume-backed snapshot image uses its mappings
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "from-snapshot-image",
                "flavorRef": "101",
                "imageRef": world.IMAGE_BFV_SNAPSHOT,
                "networks": "none",
            },
        },
        headers=HEADERS)
    assert resp.status_code == 202, resp.text

    # the snapshot-image server shows its image
    prev = resp
    resp = client.get(prev.headers["Location"], headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert resp.json["server"]["image"]["id"] == world.IMAGE_BFV_SNAPSHOT
    assert resp.json["server"]["status"] == "BUILD"

