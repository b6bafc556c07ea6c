"""The multiattach begin-detaching retry (volume/detaching.py) against FakeCinder.

FakeCinder refuses ``os-begin_detaching`` while the volume is ``detaching``
(or ``reserved``/``attaching``) exactly as Cinder 29 does, so "another
server is detaching" is a second detach begun and not yet finished; the
injected ``sleep`` lets it finish (or not) between two tries, and the
injected clock moves by what was slept, without waiting.
"""

import pytest

from volumesvc import exception
from volumesvc.volume import detaching

CONNECTOR = {"host": "h1", "platform": "x86_64", "os_type": "linux", "multipath": False}


class Clock:
    """time.monotonic and time.sleep of a test: sleeping moves the time."""

    def __init__(self, on_sleep=None):
        self.now = 0.0
        self.waits = []
        self.on_sleep = on_sleep

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.waits.append(seconds)
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(len(self.waits))


def _shared(cinder, ctx, servers=("server-a", "server-b"), multiattach=True):
    """A volume attached to ``servers``; returns its id and their attachment ids."""
    volume = cinder.create(ctx, 1, "v", "", volume_type="multi" if multiattach else None)
    attachments = {}
    for server in servers:
        attachment = cinder.attachment_create(ctx, volume["id"], server)
        cinder.attachment_update(ctx, attachment["id"], CONNECTOR, mountpoint="/dev/vdb")
        cinder.attachment_complete(ctx, attachment["id"])
        attachments[server] = attachment["id"]
    return volume["id"], attachments


def _begin(conf, cinder, ctx, volume_id, clock):
    detaching.begin_detaching(conf, cinder, ctx, volume_id, sleep=clock.sleep, clock=clock)


def test_a_second_detach_begins_once_the_first_has_ended(conf, cinder, ctx):
    volume_id, attachments = _shared(cinder, ctx)
    cinder.begin_detaching(ctx, volume_id)  # server-a's detach is running

    def first_detach_ends(waits):
        if waits == 2:
            cinder.attachment_delete(ctx, attachments["server-a"])

    clock = Clock(first_detach_ends)
    _begin(conf, cinder, ctx, volume_id, clock)
    assert cinder.get(ctx, volume_id)["status"] == "detaching"
    assert len(clock.waits) == 2
    assert 0.375 <= clock.waits[0] <= 0.625 and 0.75 <= clock.waits[1] <= 1.25


def test_the_wait_is_bounded_by_the_timeout_and_raises_cinders_refusal(conf, cinder, ctx):
    volume_id, _attachments = _shared(cinder, ctx)
    cinder.begin_detaching(ctx, volume_id)  # and it never ends
    clock = Clock()
    with pytest.raises(exception.Invalid, match="must be 'in-use'"):
        _begin(conf, cinder, ctx, volume_id, clock)
    assert clock.now == pytest.approx(10.0)  # the last wait ends at the deadline
    assert max(clock.waits) <= 4 * 1.25


def test_a_single_attach_volumes_refusal_is_final(conf, cinder, ctx):
    volume_id, _attachments = _shared(cinder, ctx, servers=("server-a",), multiattach=False)
    cinder.begin_detaching(ctx, volume_id)
    clock = Clock()
    with pytest.raises(exception.Invalid):
        _begin(conf, cinder, ctx, volume_id, clock)
    assert clock.waits == []


def test_a_multiattach_volume_attached_nowhere_is_not_waited_for(conf, cinder, ctx):
    volume = cinder.create(ctx, 1, "v", "", volume_type="multi")
    clock = Clock()
    with pytest.raises(exception.Invalid):
        _begin(conf, cinder, ctx, volume["id"], clock)
    assert clock.waits == []


def test_a_detach_waits_for_another_servers_attach(conf, cinder, ctx):
    volume_id, _attachments = _shared(cinder, ctx, servers=("server-a",))
    other = cinder.attachment_create(ctx, volume_id, "server-c")  # reserved meanwhile

    def attach_completes(waits):
        cinder.attachment_update(ctx, other["id"], CONNECTOR, mountpoint="/dev/vdc")
        cinder.attachment_complete(ctx, other["id"])

    clock = Clock(attach_completes)
    _begin(conf, cinder, ctx, volume_id, clock)
    assert len(clock.waits) == 1
    assert cinder.get(ctx, volume_id)["status"] == "detaching"


def test_zero_timeout_turns_it_off(conf, cinder, ctx):
    conf.set_override("begin_detaching_timeout", 0, group="cinder")
    volume_id, _attachments = _shared(cinder, ctx)
    cinder.begin_detaching(ctx, volume_id)
    clock = Clock()
    with pytest.raises(exception.Invalid):
        _begin(conf, cinder, ctx, volume_id, clock)
    assert clock.waits == []
