"""The storms' clean-up: every volume detached, a detach the guest did not finish asked again.

Driven by a scripted API and Cinder: a detach takes effect at once, except
for the volumes told to fail their first detach (the compute gave up waiting
for a busy guest, and the volume went back to in-use, as in Nova).
"""

import threading

import pytest

from benchmarks import attach_storm
from tests.fixtures import clock


class ScriptedCloud:
    def __init__(self, pairs, fail_first=(), fail_always=()):
        self.attached = {volume: server for server, volume in pairs}
        self.fail_first, self.fail_always = set(fail_first), set(fail_always)
        self.deletes = {}
        self.lock = threading.Lock()

    def volume_statuses(self):
        with self.lock:
            return {v: "in-use" for v in self.attached} | {
                v: "available" for v in self.deletes if v not in self.attached}

    def api(self, method, path, body=None, version="2.1", timeout=None):
        server, volume = path.split("/")[2], path.rsplit("/", 1)[1]
        with self.lock:
            if method == "GET":
                return 200, {"volumeAttachments": [
                    {"volumeId": v} for v, s in self.attached.items() if s == server]}
            assert method == "DELETE" and self.attached.get(volume) == server, path
            self.deletes[volume] = self.deletes.get(volume, 0) + 1
            if volume in self.fail_always or (
                    volume in self.fail_first and self.deletes[volume] == 1):
                return 202, None  # accepted; the compute's detach then fails
            del self.attached[volume]
            return 202, None


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    clock.patch_time(monkeypatch, attach_storm, sleep=lambda s: None)


def test_a_volume_whose_detach_failed_is_detached_again():
    # Two volumes on one server (--volumes-per-server), one on another.
    pairs = [("s1", "v1"), ("s1", "v2"), ("s2", "v3")]
    cloud = ScriptedCloud(pairs, fail_first={"v2"})
    attach_storm.detach_all(cloud, [s for s, _ in pairs], [v for _, v in pairs], timeout=0.3)
    assert cloud.attached == {}
    assert cloud.deletes == {"v1": 1, "v2": 2, "v3": 1}


def test_a_volume_that_never_lets_go_still_fails_the_run():
    pairs = [("s1", "v1"), ("s2", "v2")]
    cloud = ScriptedCloud(pairs, fail_always={"v2"})
    with pytest.raises(TimeoutError):
        attach_storm.detach_all(cloud, ["s1", "s2"], ["v1", "v2"], timeout=0.3)
    assert cloud.deletes == {"v1": 1, "v2": 3}
