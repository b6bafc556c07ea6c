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


# -- EventWaiters (the rebuild's wait for volume-reimaged) ---------------------------------

def test_a_waited_event_is_handed_to_its_waiter_once():
    waiters = events.EventWaiters()
    waiter = waiters.prepare("srv", events.VOLUME_REIMAGED, "vol")
    event = {"name": events.VOLUME_REIMAGED, "tag": "vol", "status": "failed"}
    assert waiters.deliver("srv", event) is True
    assert waiter.wait(0) == "failed"
    # Nobody waits any more: a repeat goes to the ordinary handling.
    assert waiters.deliver("srv", event) is False


def test_an_event_of_another_server_or_volume_does_not_wake_the_waiter():
    waiters = events.EventWaiters()
    waiter = waiters.prepare("srv", events.VOLUME_REIMAGED, "vol")
    assert waiters.deliver("other", {"name": events.VOLUME_REIMAGED, "tag": "vol"}) is False
    assert waiters.deliver("srv", {"name": events.VOLUME_REIMAGED, "tag": "x"}) is False
    assert waiter.wait(0.01) is None
    waiters.forget("srv", events.VOLUME_REIMAGED, "vol")
    assert waiters.deliver("srv", {"name": events.VOLUME_REIMAGED, "tag": "vol"}) is False


def test_an_event_without_status_counts_as_completed():
    waiters = events.EventWaiters()
    waiter = waiters.prepare("srv", events.VOLUME_REIMAGED, "vol")
    waiters.deliver("srv", {"name": events.VOLUME_REIMAGED, "tag": "vol"})
    assert waiter.wait(0) == "completed"
