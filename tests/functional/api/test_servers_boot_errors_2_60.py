"""POST /servers refusals of doc/source/contributor/contract.rst §4.2 (and networks/legacy
BDM/flavor), in order.
"""

import re

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServersWorld as world

HEADERS = {
    "accept": "application/json",
    "content-type": "application/json",
    "x-auth-token": "alice:7e57000000000000000000000000a11c",
    "openstack-api-version": "compute 2.60",
}


@pytest.fixture
def client():
    with fixtures.open_world(world) as (app, _deps):
        yield app.test_client()


def test_blank_with_a_uuid(client):
    """Blank with a uuid."""
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "uuid": world.VOL_BOOT,
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: Invalid device UUID.")


def test_volume_without_a_uuid(client):
    """Volume without a uuid."""
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {"source_type": "volume", "destination_type": "volume", "boot_index": 0},
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: Missing device UUID.")


def test_image_to_local_without_imageref(client):
    """Image to local without imageRef."""
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "image",
                        "uuid": world.IMAGE,
                        "destination_type": "local",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: Mapping image to local is not supported.")


def test_nothing_to_boot(client):
    """Nothing to boot."""
    resp = client.post(
        "/v2.1/servers",
        json={"server": {"name": "s", "flavorRef": "101", "networks": "none"}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Missing imageRef attribute"


def test_unknown_flavor(client):
    """Unknown flavor."""
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "999",
                "networks": "none",
                "imageRef": world.IMAGE,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Flavor 999 could not be found."


def test_disabled_flavor(client):
    """Disabled flavor."""
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "103",
                "networks": "none",
                "imageRef": world.IMAGE,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Flavor 103 could not be found."


def test_private_flavor_made_by_an_admin_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # private flavor made by an admin
    resp = client.post(
        "/v2.1/flavors",
        json={
            "flavor": {
                "name": "test.private",
                "id": "104",
                "ram": 512,
                "vcpus": 1,
                "disk": 1,
                "os-flavor-access:is_public": False,
            },
        },
        headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text

    # private flavor is unknown to a member at boot
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "104",
                "networks": "none",
                "imageRef": world.IMAGE,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Flavor 104 could not be found."

    # image needs more memory than the flavor has
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "imageRef": world.IMAGE_MIN_RAM_1G,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Flavor's memory is too small for requested image.")

    # unknown image
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "imageRef": world.IMAGE_UNKNOWN,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "Can not find requested image"

    # image not active
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "imageRef": world.IMAGE_QUEUED,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == f"Image {world.IMAGE_QUEUED} is not active."

    # no boot index 0
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 1,
                        "volume_size": 1,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device "
        "mapping combination is not valid.")

    # image to volume needs a size
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "image",
                        "uuid": world.IMAGE,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Images with destination_type 'volume' need to have a non-zero size specified")

    # blank to volume needs a size
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "image",
                        "uuid": world.IMAGE,
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                    },
                    {"source_type": "blank", "destination_type": "volume"},
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Blank volumes (source: 'blank', dest: 'volume') need to have non-zero size")

    # unknown image in a mapping
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "image",
                        "uuid": world.IMAGE_UNKNOWN,
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"Block Device Mapping is Invalid: failed to get image {world.IMAGE_UNKNOWN}.")

    # unknown snapshot
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "snapshot",
                        "uuid": world.VOL_UNKNOWN,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"Block Device Mapping is Invalid: failed to get snapshot {world.VOL_UNKNOWN}.")

    # unknown volume
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_UNKNOWN,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        f"Block Device Mapping is Invalid: failed to get volume {world.VOL_UNKNOWN}.")

    # root volume not bootable
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_DATA,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == f"Block Device {world.VOL_DATA} is not bootable."

    # one volume, many servers
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "max_count": 2,
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_BOOT,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Cannot attach one or more volumes to multiple instances")

    # multiattach volume below 2.60
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_MULTI,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers={**HEADERS, "openstack-api-version": "compute 2.59"})
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Multiattach volumes are only supported starting with compute API version 2.60.")

    # volume in another availability zone
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "availability_zone": "nova",
                "imageRef": world.IMAGE,
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_OTHER_AZ,
                        "destination_type": "volume",
                        "boot_index": 1,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("not in same availability_zone", str(resp.json["badRequest"]["message"]))

    # two swap disks
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "102",
                "networks": "none",
                "imageRef": world.IMAGE,
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "local",
                        "guest_format": "swap",
                        "volume_size": 1,
                    },
                    {
                        "source_type": "blank",
                        "destination_type": "local",
                        "guest_format": "swap",
                        "volume_size": 1,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Block Device Mapping is Invalid: More than one swap drive requested.")

    # ephemeral larger than the flavor
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "102",
                "networks": "none",
                "imageRef": world.IMAGE,
                "block_device_mapping_v2": [
                    {"source_type": "blank", "destination_type": "local", "volume_size": 5},
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("^Ephemeral disks requested are larger than the instance type allows",
                     str(resp.json["badRequest"]["message"]))

    # legacy block_device_mapping is refused
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping": [{"volume_id": world.VOL_BOOT, "device_name": "vda"}],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "The legacy block_device_mapping format is not supported; use block_device_mapping_v2.")

    # both formats are refused
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "block_device_mapping": [{"volume_id": world.VOL_BOOT, "device_name": "vda"}],
                "block_device_mapping_v2": [
                    {
                        "source_type": "volume",
                        "uuid": world.VOL_BOOT,
                        "destination_type": "volume",
                        "boot_index": 0,
                    },
                ],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == (
        "Using different block_device_mapping syntaxes is not allowed in the same request.")

    # a list of networks is refused
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "imageRef": world.IMAGE,
                "networks": [{"uuid": "0e7f0000-0000-4000-8000-000000000001"}],
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("manages no networks", str(resp.json["badRequest"]["message"]))

    # networks are required from 2.37
    resp = client.post(
        "/v2.1/servers",
        json={"server": {"name": "s", "flavorRef": "101", "imageRef": world.IMAGE}},
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert re.search("'networks' is a required property", str(resp.json["badRequest"]["message"]))

    # networks are optional before 2.37
    resp = client.post(
        "/v2.1/servers",
        json={"server": {"name": "s", "flavorRef": "101", "imageRef": world.IMAGE}},
        headers={**HEADERS, "openstack-api-version": "compute 2.36"})
    assert resp.status_code == 202, resp.text

    # auto is not a list before 2.37
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "auto",
                "imageRef": world.IMAGE,
            },
        },
        headers={**HEADERS, "openstack-api-version": "compute 2.36"})
    assert resp.status_code == 400, resp.text

    # bdm tag at 2.32
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "tag": "root",
                    },
                ],
            },
        },
        headers={**HEADERS, "openstack-api-version": "compute 2.32"})
    assert resp.status_code == 202, resp.text

    # bdm tag refused at 2.33
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "block_device_mapping_v2": [
                    {
                        "source_type": "blank",
                        "destination_type": "volume",
                        "boot_index": 0,
                        "volume_size": 1,
                        "tag": "root",
                    },
                ],
            },
        },
        headers={**HEADERS, "openstack-api-version": "compute 2.33"})
    assert resp.status_code == 400, resp.text

    # min_count above max_count
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "min_count": 3,
                "max_count": 2,
                "imageRef": world.IMAGE,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 400, resp.text
    assert resp.json["badRequest"]["message"] == "min_count must be <= max_count"

    # Regression: min_count "9999999999999999999" made the API build that many
    # instance records in memory (23 GB before the OOM killer ended it).
    # min_count above max_servers_per_request is refused before any work
    resp = client.post(
        "/v2.1/servers",
        json={
            "server": {
                "name": "s",
                "flavorRef": "101",
                "networks": "none",
                "min_count": "9999999999999999999",
                "imageRef": world.IMAGE,
            },
        },
        headers=HEADERS)
    assert resp.status_code == 403, resp.text
    assert resp.json["forbidden"]["message"] == (
        "Requested 9999999999999999999 servers in one request, but at most 100 may be created at "
        "once.")

    # nothing was reserved or left behind by the refusals
    resp = client.get("/v2.1/servers", headers=HEADERS)
    assert resp.status_code == 200, resp.text
    assert len(resp.json["servers"]) == 2

