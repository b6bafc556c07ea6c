"""logic/bdm.py rules that need no Cinder, Glance or database."""

import json

import pytest

from volumesvc import exception
from volumesvc.api.logic import bdm

IMAGE = "1a6e0000-0000-4000-8000-000000000001"


@pytest.mark.parametrize(("item", "image", "message"), [
    ({"source_type": "blank", "uuid": "x", "destination_type": "volume"}, False,
     "Invalid device UUID."),
    ({"source_type": "snapshot", "destination_type": "volume"}, False,
     "Missing device UUID."),
    ({"source_type": "image", "uuid": IMAGE, "destination_type": "local",
      "boot_index": 0}, False, "Mapping image to local is not supported."),
    ({"source_type": "image", "uuid": IMAGE, "destination_type": "local",
      "boot_index": None}, True, "Mapping image to local is not supported."),
    ({"source_type": "blank", "destination_type": "local", "volume_type": "t"}, True,
     "Specifying a volume_type with destination_type=local is not supported."),
    ({"source_type": "volume", "uuid": IMAGE, "destination_type": "volume",
      "volume_type": "t"}, False,
     "Specifying volume type to existing volume is not supported."),
])
def test_from_api_refusals(item, image, message):
    with pytest.raises(exception.InvalidBDMFormat) as err:
        bdm.from_api([item], image)
    assert err.value.format_message() == f"Block Device Mapping is Invalid: {message}"


def test_from_api_normalizes():
    (out,) = bdm.from_api([{"source_type": "snapshot", "uuid": IMAGE,
                            "destination_type": "volume", "boot_index": "0",
                            "volume_size": "3", "delete_on_termination": "yes",
                            "volume_type": ""}], False)
    assert out["snapshot_id"] == IMAGE and out["boot_index"] == 0
    assert out["volume_size"] == 3 and out["delete_on_termination"] is True
    assert out["volume_type"] is None and "uuid" not in out


def test_no_device_items_are_dropped():
    assert bdm.from_api([{"device_name": "vdb", "no_device": True}], False) == []


def test_image_to_local_root_allowed_with_image_ref():
    (out,) = bdm.from_api([{"source_type": "image", "uuid": IMAGE,
                            "destination_type": "local", "boot_index": 0}], True)
    assert out["image_id"] == IMAGE


def _image(mapping, flag="True"):
    return {"id": IMAGE, "properties": {"bdm_v2": flag,
                                        "block_device_mapping": json.dumps(mapping)}}


def test_image_defined_and_merge():
    snap = {"source_type": "snapshot", "destination_type": "volume", "snapshot_id": "s",
            "boot_index": 0, "device_name": "/dev/vda", "volume_size": 2,
            "volume_type": "fast", "no_device": None, "tag": None}
    image_bdms = bdm.image_defined(_image([snap]))
    assert image_bdms[0]["volume_type"] == "fast"
    # The client's image→local root is replaced by the image's bootable volume.
    requested = bdm.from_api([{"source_type": "image", "uuid": IMAGE,
                               "destination_type": "local", "boot_index": 0}], True)
    merged = bdm.merge(IMAGE, image_bdms, requested)
    assert [b["source_type"] for b in merged] == ["snapshot"]
    # A requested mapping on the same device wins.
    override = bdm.from_api([{"source_type": "blank", "destination_type": "volume",
                              "device_name": "vda", "boot_index": 0,
                              "volume_size": 9}], True)
    assert bdm.merge(IMAGE, image_bdms, override)[0]["volume_size"] == 9


def test_plain_images_define_nothing_and_get_a_root_disk():
    assert bdm.image_defined({"id": IMAGE, "properties": {}}) == []
    assert bdm.image_defined(_image([{"boot_index": 0}], flag="False")) == []
    (root,) = bdm.merge(IMAGE, [], [])
    assert (root["source_type"], root["destination_type"], root["boot_index"],
            root["image_id"]) == ("image", "local", 0, IMAGE)


@pytest.mark.parametrize("indexes", [[], [1], [0, 2], [0, 0]])
def test_boot_sequence(indexes):
    bdms = [{"boot_index": i} for i in indexes] + [{"boot_index": -1}]
    with pytest.raises(exception.InvalidBDMBootSequence):
        bdm._check_boot_sequence(bdms)


def test_boot_sequence_ok():
    bdm._check_boot_sequence([{"boot_index": 1}, {"boot_index": -1}, {"boot_index": 0}])


def test_missing_image_ref():
    with pytest.raises(exception.Invalid, match="^Missing imageRef attribute$"):
        bdm.require_image_or_bdms(None, [])
