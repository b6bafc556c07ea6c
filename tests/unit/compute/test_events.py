"""The compute's reading of Cinder's extend target (``extend_new_size``)."""

import pytest

from volumesvc import exception
from volumesvc.compute import events


def _volume(value, size=1):
    metadata = {} if value is None else {"extend_new_size": value}
    return {"id": "v1", "size": size, "status": "extending", "metadata": metadata}


@pytest.mark.parametrize("value, expected", [("2", 2), (" 3 ", 3), (4, 4)])
def test_target_size_reads_whole_gib(value, expected):
    assert events.target_size(_volume(value)) == expected


@pytest.mark.parametrize("value, reason", [
    (None, "has no extend_new_size metadata"),
    ("2.5", "is not a whole number of GiB"),
    ("", "is not a whole number of GiB"),
    ("1", "is not larger than the current size 1"),
    ("0", "is not larger than the current size 1"),
])
def test_target_size_refuses_with_a_reason(value, reason):
    with pytest.raises(exception.ExtendVolumeFailed) as info:
        events.target_size(_volume(value))
    assert reason in info.value.format_message()
    assert "v1" in info.value.format_message()
