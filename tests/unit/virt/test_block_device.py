"""Device naming and connection_info helpers."""

import pytest

from volumesvc import exception
from volumesvc.virt import block_device


@pytest.mark.parametrize("index,suffix", [(0, "a"), (1, "b"), (25, "z"), (26, "aa"),
                                          (27, "ab"), (701, "zz")])
def test_suffix_round_trip(index, suffix):
    assert block_device.index_to_suffix(index) == suffix
    assert block_device.suffix_to_index(suffix) == index


@pytest.mark.parametrize("bad", ["", "A", "1", "a1", None])
def test_suffix_to_index_rejects_non_letters(bad):
    assert block_device.suffix_to_index(bad) is None


def test_next_name_on_empty_bus():
    assert block_device.get_next_device_name([], "scsi") == "/dev/sda"
    assert block_device.get_next_device_name(None, "virtio") == "/dev/vda"
    assert block_device.get_next_device_name([], "ide") == "/dev/hda"


def test_next_name_fills_the_first_gap_and_ignores_other_buses():
    used = ["/dev/sda", "sdc", "/dev/vdb", "vda"]
    assert block_device.get_next_device_name(used, "scsi") == "/dev/sdb"
    assert block_device.get_next_device_name(used, "virtio") == "/dev/vdc"


def test_next_name_past_z():
    used = [f"sd{block_device.index_to_suffix(i)}" for i in range(26)]
    assert block_device.get_next_device_name(used, "scsi") == "/dev/sdaa"


def test_sata_and_usb_share_the_sd_prefix():
    assert block_device.get_next_device_name(["sda"], "sata") == "/dev/sdb"


def test_unknown_bus_is_invalid():
    with pytest.raises(exception.Invalid):
        block_device.get_next_device_name([], "floppy")


def test_bus_full_is_invalid():
    used = [f"vd{block_device.index_to_suffix(i)}" for i in range(3)]
    with pytest.raises(exception.Invalid):
        block_device.get_next_device_name(used, "virtio", limit=3)


def test_unit_for_device():
    assert block_device.unit_for_device("/dev/sda") == 0
    assert block_device.unit_for_device("sdb") == 1
    assert block_device.unit_for_device("vdb") is None


def test_volume_id_prefers_serial():
    assert block_device.volume_id({"serial": "a", "data": {"volume_id": "b"}}) == "a"
    assert block_device.volume_id({"data": {"volume_id": "b"}}) == "b"
    assert block_device.volume_id({}) is None
