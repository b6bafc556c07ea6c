"""The multiattach reservation retry (volume/reserve.py) against FakeCinder.

FakeCinder refuses a reservation while the volume is ``reserved`` or
``attaching`` exactly as Cinder 29 does, so "another server is attaching"
is a second attachment left half way; the injected ``sleep`` lets that
attach finish (or not) between two tries, without waiting.
"""

import pytest

from volumesvc import exception
from volumesvc.volume import reserve

CONNECTOR = {"host": "h1", "platform": "x86_64", "os_type": "linux", "multipath": False}


def _busy(cinder, ctx, multiattach=True):
    """A volume another server is attaching (status ``attaching``)."""
    volume = cinder.create(ctx, 1, "v", "", volume_type="multi" if multiattach else None)
    other = cinder.attachment_create(ctx, volume["id"], "other-server")
    cinder.attachment_update(ctx, other["id"], CONNECTOR, mountpoint="/dev/vdb")
    assert cinder.get(ctx, volume["id"])["status"] == "attaching"
    return volume["id"], other["id"]


def test_a_busy_multiattach_volume_is_reserved_once_the_other_attach_completes(
        conf, cinder, ctx):
    volume_id, other = _busy(cinder, ctx)
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        if len(waits) == 2:  # the other server's attach finishes meanwhile
            cinder.attachment_complete(ctx, other)

    attachment = reserve.attachment_create(conf, cinder, ctx, volume_id, "me", sleep=sleep)
    assert cinder.attachments[attachment["id"]]["instance"] == "me"
    assert len(waits) == 2
    assert 0.375 <= waits[0] <= 0.625 and 0.75 <= waits[1] <= 1.25  # doubling, jittered
    assert sorted(a["instance"] for a in cinder.attachments.values()) == ["me", "other-server"]


def test_the_retry_is_bounded_and_raises_cinders_refusal(conf, cinder, ctx):
    volume_id, _other = _busy(cinder, ctx)
    waits = []
    with pytest.raises(exception.Invalid, match="current status is attaching"):
        reserve.attachment_create(conf, cinder, ctx, volume_id, "me", sleep=waits.append)
    assert len(waits) == 3
    assert [a["instance"] for a in cinder.attachments.values()] == ["other-server"]


def test_a_single_attach_volumes_refusal_is_final(conf, cinder, ctx):
    volume_id, _other = _busy(cinder, ctx, multiattach=False)
    waits = []
    with pytest.raises(exception.Invalid):
        reserve.attachment_create(conf, cinder, ctx, volume_id, "me", sleep=waits.append)
    assert waits == []


def test_an_errored_multiattach_volume_is_not_retried(conf, cinder, ctx):
    volume = cinder.create(ctx, 1, "v", "", volume_type="multi")
    cinder.set_status(volume["id"], "error")
    waits = []
    with pytest.raises(exception.Invalid):
        reserve.attachment_create(conf, cinder, ctx, volume["id"], "me", sleep=waits.append)
    assert waits == []


def test_zero_retries_turns_it_off(conf, cinder, ctx):
    conf.set_override("attachment_reserve_retries", 0, group="cinder")
    volume_id, _other = _busy(cinder, ctx)
    waits = []
    with pytest.raises(exception.Invalid):
        reserve.attachment_create(conf, cinder, ctx, volume_id, "me", sleep=waits.append)
    assert waits == []


def test_backoff_doubles_up_to_eight_times_the_interval():
    exact = [reserve.backoff(0.5, n, rand=lambda lo, hi: 1.0) for n in range(6)]
    assert exact == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
