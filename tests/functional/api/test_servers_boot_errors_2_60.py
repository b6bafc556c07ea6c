"""POST /servers refusals of doc/source/contributor/contract.rst §4.2 (and networks/legacy
BDM/flavor), in order.
"""

import re

import pytest

from tests.functional.api.fixtures import ServersWorld as world
from tests.functional.api.journeys import (
    assert_fault,
    at_version,
    get_list,
    json_headers,
    mapping,
    server_body,
)

HEADERS = json_headers("2.60")
INVALID = "Block Device Mapping is Invalid: "


def boot(**fields):
    """A body with no networks (``networks: none``) unless ``fields`` say otherwise."""
    return server_body(**{"networks": "none", **fields})


def v2(*entries):
    return {"block_device_mapping_v2": list(entries)}


@pytest.mark.parametrize("body, message", [
    pytest.param(
        boot(**v2(mapping("blank", world.VOL_BOOT, boot_index=0, volume_size=1))),
        INVALID + "Invalid device UUID.", id="blank_with_a_uuid"),
    pytest.param(
        boot(**v2(mapping("volume", boot_index=0))),
        INVALID + "Missing device UUID.", id="volume_without_a_uuid"),
    pytest.param(
        boot(**v2(mapping("image", world.IMAGE, "local", boot_index=0))),
        INVALID + "Mapping image to local is not supported.",
        id="image_to_local_without_imageref"),
    pytest.param(boot(), "Missing imageRef attribute", id="nothing_to_boot"),
    pytest.param(boot(flavor="999", imageRef=world.IMAGE), "Flavor 999 could not be found.",
                 id="unknown_flavor"),
    pytest.param(boot(flavor="103", imageRef=world.IMAGE), "Flavor 103 could not be found.",
                 id="disabled_flavor"),
])
def test_refused(client, body, message):
    assert_fault(client.post("/v2.1/servers", json=body, headers=HEADERS), 400, message)


SWAP = mapping("blank", dest="local", guest_format="swap", volume_size=1)
LEGACY = {"block_device_mapping": [{"volume_id": world.VOL_BOOT, "device_name": "vda"}]}
ROOT_TAGGED = v2(mapping("blank", boot_index=0, volume_size=1, tag="root"))

# (step, body, version, status, message: text, pattern or None), in journey order.
JOURNEY = [
    ("private flavor is unknown to a member at boot",
     boot(flavor="104", imageRef=world.IMAGE), "2.60", 400, "Flavor 104 could not be found."),
    ("image needs more memory than the flavor has",
     boot(imageRef=world.IMAGE_MIN_RAM_1G), "2.60", 400,
     "Flavor's memory is too small for requested image."),
    ("unknown image",
     boot(imageRef=world.IMAGE_UNKNOWN), "2.60", 400, "Can not find requested image"),
    ("image not active",
     boot(imageRef=world.IMAGE_QUEUED), "2.60", 400, f"Image {world.IMAGE_QUEUED} is not active."),
    ("no boot index 0",
     boot(**v2(mapping("blank", boot_index=1, volume_size=1))), "2.60", 400,
     INVALID + "Boot sequence for the instance and image/block device mapping combination is "
     "not valid."),
    ("image to volume needs a size",
     boot(**v2(mapping("image", world.IMAGE, boot_index=0))), "2.60", 400,
     "Images with destination_type 'volume' need to have a non-zero size specified"),
    ("blank to volume needs a size",
     boot(**v2(mapping("image", world.IMAGE, boot_index=0, volume_size=1), mapping("blank"))),
     "2.60", 400, "Blank volumes (source: 'blank', dest: 'volume') need to have non-zero size"),
    ("unknown image in a mapping",
     boot(**v2(mapping("image", world.IMAGE_UNKNOWN, boot_index=0, volume_size=1))), "2.60", 400,
     INVALID + f"failed to get image {world.IMAGE_UNKNOWN}."),
    ("unknown snapshot",
     boot(**v2(mapping("snapshot", world.VOL_UNKNOWN, boot_index=0))), "2.60", 400,
     INVALID + f"failed to get snapshot {world.VOL_UNKNOWN}."),
    ("unknown volume",
     boot(**v2(mapping("volume", world.VOL_UNKNOWN, boot_index=0))), "2.60", 400,
     INVALID + f"failed to get volume {world.VOL_UNKNOWN}."),
    ("root volume not bootable",
     boot(**v2(mapping("volume", world.VOL_DATA, boot_index=0))), "2.60", 400,
     f"Block Device {world.VOL_DATA} is not bootable."),
    ("one volume, many servers",
     boot(max_count=2, **v2(mapping("volume", world.VOL_BOOT, boot_index=0))), "2.60", 400,
     "Cannot attach one or more volumes to multiple instances"),
    ("multiattach volume below 2.60",
     boot(**v2(mapping("volume", world.VOL_MULTI, boot_index=0))), "2.59", 400,
     "Multiattach volumes are only supported starting with compute API version 2.60."),
    ("volume in another availability zone",
     boot(availability_zone="nova", imageRef=world.IMAGE,
          **v2(mapping("volume", world.VOL_OTHER_AZ, boot_index=1))), "2.60", 400,
     re.compile("not in same availability_zone")),
    ("two swap disks",
     boot(flavor="102", imageRef=world.IMAGE, **v2(SWAP, SWAP)), "2.60", 400,
     INVALID + "More than one swap drive requested."),
    ("ephemeral larger than the flavor",
     boot(flavor="102", imageRef=world.IMAGE,
          **v2(mapping("blank", dest="local", volume_size=5))), "2.60", 400,
     re.compile("^Ephemeral disks requested are larger than the instance type allows")),
    ("legacy block_device_mapping is refused",
     boot(**LEGACY), "2.60", 400,
     "The legacy block_device_mapping format is not supported; use block_device_mapping_v2."),
    ("both formats are refused",
     boot(**LEGACY, **v2(mapping("volume", world.VOL_BOOT, boot_index=0))), "2.60", 400,
     "Using different block_device_mapping syntaxes is not allowed in the same request."),
    ("a list of networks is refused",
     boot(imageRef=world.IMAGE, networks=[{"uuid": "0e7f0000-0000-4000-8000-000000000001"}]),
     "2.60", 400, re.compile("manages no networks")),
    ("networks are required from 2.37",
     server_body(imageRef=world.IMAGE), "2.60", 400,
     re.compile("'networks' is a required property")),
    ("networks are optional before 2.37",
     server_body(imageRef=world.IMAGE), "2.36", 202, None),
    ("auto is not a list before 2.37",
     boot(networks="auto", imageRef=world.IMAGE), "2.36", 400, None),
    ("bdm tag at 2.32", server_body(**ROOT_TAGGED), "2.32", 202, None),
    ("bdm tag refused at 2.33", server_body(**ROOT_TAGGED), "2.33", 400, None),
    ("min_count above max_count",
     boot(min_count=3, max_count=2, imageRef=world.IMAGE), "2.60", 400,
     "min_count must be <= max_count"),
]


def test_private_flavor_made_by_an_admin_onwards(client):
    """The journey from here on, in order: each step sees what the earlier ones did."""
    # private flavor made by an admin
    flavor = {"name": "test.private", "id": "104", "ram": 512, "vcpus": 1, "disk": 1,
              "os-flavor-access:is_public": False}
    resp = client.post("/v2.1/flavors", json={"flavor": flavor},
                       headers={**HEADERS, "x-auth-token": "admin:admin-project"})
    assert resp.status_code == 200, resp.text

    for step, body, version, status, message in JOURNEY:
        resp = client.post("/v2.1/servers", json=body, headers=at_version(HEADERS, version))
        assert_fault(resp, status, message, step=step)

    # Regression: min_count "9999999999999999999" made the API build that many
    # instance records in memory (23 GB before the OOM killer ended it).
    # min_count above max_servers_per_request is refused before any work
    resp = client.post(
        "/v2.1/servers", json=boot(min_count="9999999999999999999", imageRef=world.IMAGE),
        headers=HEADERS)
    assert_fault(resp, 403, "Requested 9999999999999999999 servers in one request, but at most "
                 "100 may be created at once.", fault="forbidden")

    # nothing was reserved or left behind by the refusals
    resp = get_list(client, "/v2.1/servers", HEADERS, "servers", 2)
