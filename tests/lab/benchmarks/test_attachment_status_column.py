"""The attach storm's attachment-status column (issue 14).

The poller is the client the column describes: it knows only the compute
API at 2.106. These tests drive it with a scripted API (each server answers
``attaching`` a few times, then ``attached``) and check what it records and
how the report judges agreement with Cinder's ``in-use``.
"""

import threading

from benchmarks import attach_storm
from benchmarks.lib import storm_report


class ScriptedAPI:
    """``os-volume_attachments`` at 2.106: ``attaching`` for ``k`` GETs, then ``attached``."""

    def __init__(self, volume_of, attaching_for, failed=None):
        self.volume_of, self.attaching_for = volume_of, attaching_for
        self.failed = failed or {}
        self.calls = {}
        self.versions = set()
        self.lock = threading.Lock()

    def api(self, method, path, body=None, version="2.1", timeout=None):
        assert method == "GET" and path.endswith("/os-volume_attachments")
        server = path.split("/")[2]
        with self.lock:
            self.versions.add(version)
            k = self.calls[server] = self.calls.get(server, 0) + 1
        volume = self.volume_of[server]
        if server in self.failed:
            entry = {"volumeId": volume, "status": "error", "fault": self.failed[server]}
        elif k <= self.attaching_for[server]:
            entry = {"volumeId": volume, "status": "attaching"}
        else:
            entry = {"volumeId": volume, "status": "attached"}
        other = {"volumeId": "someone-else", "status": "attached"}
        return 200, {"volumeAttachments": [other, entry]}


def test_poller_records_attaching_then_attached_at_2_106():
    servers = [f"s{i}" for i in range(6)]
    volumes = [f"v{i}" for i in range(6)]
    attaching_for = {s: i % 3 for i, s in enumerate(servers)}
    api = ScriptedAPI(dict(zip(servers, volumes, strict=True)), attaching_for)
    poller = attach_storm.StatusPoller(api, servers, volumes, interval=0.01, timeout=5)
    poller.start()
    poller.stop(timeout=10)
    assert api.versions == {"2.106"}
    assert set(poller.attached_at) == set(volumes)
    # servers 1, 2, 4, 5 answered "attaching" at least once before "attached"
    assert poller.attaching_seen == {"v1", "v2", "v4", "v5"}
    # a server seen attached is not asked again: one GET more than its "attaching" answers
    assert api.calls == {s: i % 3 + 1 for i, s in enumerate(servers)}
    assert poller.errors == {}


def test_poller_keeps_failed_attach_with_its_fault_and_stops_when_told():
    fault = {"code": 500, "message": "Cinder refused the attachment update"}
    api = ScriptedAPI({"s0": "v0", "s1": "v1"}, {"s0": 0, "s1": 0}, failed={"s1": fault})
    poller = attach_storm.StatusPoller(api, ["s0", "s1"], ["v0", "v1"], interval=0.01,
                                       timeout=5)
    poller.start()
    poller.stop(timeout=0.3)  # v1 never becomes attached: stop() must still return
    assert set(poller.attached_at) == {"v0"}
    assert poller.errors == {"v1": fault}


def _run(api_times, cinder_times, interval=1.0):
    n = len(api_times)
    return {"version": "2.101", "n": n, "status": {
        "api_attached": api_times, "cinder_in_use": cinder_times, "attaching_seen": n,
        "errors": {}, "never_attached": 0, "sweeps": 9, "failed_requests": 0,
        "interval": interval}}


def test_report_agrees_within_one_poll_interval():
    lines = storm_report.status_table({"runs": [_run([1.0, 2.0, 3.5], [0.8, 1.6, 3.0])]})
    row = lines[-1]
    assert "**met** (1.00 s:" in row
    assert "3 of 3" in row


def test_report_flags_api_lagging_cinder_by_more_than_an_interval():
    row = storm_report.status_table({"runs": [_run([3.0, 4.0, 6.0], [0.8, 1.6, 3.0])]})[-1]
    assert "**missed**" in row


def test_no_status_poll_no_column():
    assert storm_report.status_table({"runs": [{"version": "2.101", "status": None}]}) == []


def test_since_answer_counts_from_each_202():
    results = [(0.0, 1.0, None), (0.0, 2.0, None), (0.0, 1.5, "HTTP 500")]
    seen = {"a": 3.0, "b": 2.5, "c": 9.0}
    assert attach_storm._since_answer(results, ["a", "b", "c"], seen) == [2.0, 0.5]


def test_scale_goals_floor_counts_every_process_of_the_storm():
    run = {"version": "2.101", "n": 100, "in_use_after": 10.0,
           "probe": [0.01] * 50 + [0.05] * 50,
           "cpu": {"api": 1.0, "conductor": 1.0, "compute": 0.5, "cinder-api": 4.0,
                   "cinder-scheduler": 0.5, "cinder-volume": 0.5, "shared daemons": 2.5}}
    lines = storm_report.scale_goals({"runs": [run]}, idle_p99=0.01)
    text = lines[-1]
    # every process: (2.5 ours + 5.0 Cinder + 2.5 daemons) / 100 = 0.1 CPU-s per attach
    floor = 100 * 0.1 / storm_report.CORES
    assert f"floor {floor:.1f} s" in text
    assert "ours 0.025 CPU-s per attach **met**" in text
    assert "= 5.0× idle **met**" in text


def test_agreement_uses_the_polls_real_period():
    run = _run([3.0, 4.0, 6.0], [0.8, 1.6, 3.0])  # 2.2 s / 3.0 s apart
    run["status"].update(api_period=1.1, cinder_period=3.2)  # a list waited in Cinder's queue
    row = storm_report.status_table({"runs": [run]})[-1]
    assert "**met** (3.20 s: API 1.10 s, Cinder 3.20 s)" in row


def test_mean_gap_is_the_resolution_of_a_poll():
    assert attach_storm._mean_gap([10.0, 11.0, 13.0, 16.0]) == 2.0
    assert attach_storm._mean_gap([10.0]) is None
