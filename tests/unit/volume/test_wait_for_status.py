"""cleanup.wait_for_status: how many GETs a wait costs (issue 15, boot storm)."""

import pytest

from tests.fixtures import clock
from volumesvc import exception
from volumesvc.volume import cleanup


class _Cinder:
    """Answers GETs with the given statuses in turn (the last one repeats)."""

    def __init__(self, *statuses):
        self.statuses = list(statuses)
        self.gets = 0

    def get(self, context, volume_id):
        self.gets += 1
        status = self.statuses[min(self.gets, len(self.statuses)) - 1]
        return {"id": volume_id, "status": status}


def test_a_known_ready_volume_costs_no_request():
    cinder = _Cinder("available")
    volume = cleanup.wait_for_status(cinder, None, "v1", ("available",), timeout=5,
                                     known={"id": "v1", "status": "available"})
    assert volume["status"] == "available" and cinder.gets == 0


def test_a_volume_just_created_is_read_once_when_ready_one_interval_later(monkeypatch):
    sleeps = []
    clock.patch_time(monkeypatch, cleanup, sleep=sleeps.append)
    cinder = _Cinder("available")
    volume = cleanup.wait_for_status(cinder, None, "v1", ("available",), timeout=5,
                                     interval=0.25,
                                     known={"id": "v1", "status": "creating"})
    assert volume["status"] == "available"
    # Regression: the first GET went out at once, when the volume cannot be ready.
    assert cinder.gets == 1 and sleeps == [0.25]


def test_without_known_the_first_get_is_immediate(monkeypatch):
    sleeps = []
    clock.patch_time(monkeypatch, cleanup, sleep=sleeps.append)
    cinder = _Cinder("creating", "creating", "available")
    cleanup.wait_for_status(cinder, None, "v1", ("available",), timeout=5, interval=0.1)
    assert cinder.gets == 3 and sleeps == [0.1, 0.1]


def test_error_status_still_raises_after_a_known_creating(monkeypatch):
    clock.patch_time(monkeypatch, cleanup, sleep=lambda _: None)
    cinder = _Cinder("error")
    with pytest.raises(exception.VolumesvcException, match="went to status error"):
        cleanup.wait_for_status(cinder, None, "v1", ("available",), timeout=5,
                                known={"id": "v1", "status": "creating"})
