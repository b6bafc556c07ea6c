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


# -- the key an extend of a volume the host decrypts needs ----------------------------------

class _Driver:
    """Records what extend_volume was given; the host decrypts what ``os-brick`` opened."""

    def __init__(self):
        self.extends = []

    def needs_key_to_extend(self, connection_info):
        return (connection_info.get("encryption") or {}).get("method") == "os-brick"

    def extend_volume(self, connection_info, instance, requested_size_bytes, key=None):
        self.extends.append((requested_size_bytes, key))
        return requested_size_bytes


class _Keys:
    def __init__(self, refuse=False):
        self.reads = []
        self.refuse = refuse

    def get_key(self, context, key_id, volume_id):
        self.reads.append((context, key_id, volume_id))
        if self.refuse:
            raise exception.EncryptionKeyNotReadable(backend="barbican", key_id=key_id,
                                                     volume_id=volume_id, reason="403")
        return f"key {key_id}"


class _Bdm:
    def __init__(self, connection_info):
        self.connection_info = connection_info


def _opened_by(method):
    return {"serial": "v1", "data": {},
            "encryption": {"method": method, "volume_id": "v1", "encryption_key_id": "k1"}}


def test_a_volume_the_host_decrypts_is_extended_with_its_key_read_as_the_events_user():
    driver, keys = _Driver(), _Keys()
    handler = events.ExternalEvents(None, driver, None, None, None, keys=keys)
    ctx = object()
    assert handler._resize(ctx, {"uuid": "srv"}, _Bdm(_opened_by("os-brick")), "v1", 2) \
        == 2 * events.GiB
    assert keys.reads == [(ctx, "k1", "v1")]
    assert driver.extends == [(2 * events.GiB, "key k1")]


@pytest.mark.parametrize("connection_info", [_opened_by("qemu"), {"serial": "v1", "data": {}}])
def test_no_key_is_read_for_a_volume_qemu_decrypts_or_a_plain_one(connection_info):
    driver, keys = _Driver(), _Keys()
    handler = events.ExternalEvents(None, driver, None, None, None, keys=keys)
    handler._resize(object(), {"uuid": "srv"}, _Bdm(connection_info), "v1", 2)
    assert keys.reads == []
    assert driver.extends == [(2 * events.GiB, None)]


def test_a_key_the_user_may_not_read_fails_the_extend_naming_the_key_manager():
    driver = _Driver()
    handler = events.ExternalEvents(None, driver, None, None, None, keys=_Keys(refuse=True))
    with pytest.raises(exception.ExtendVolumeFailed, match="barbican"):
        handler._resize(object(), {"uuid": "srv"}, _Bdm(_opened_by("os-brick")), "v1", 2)
    assert driver.extends == []
