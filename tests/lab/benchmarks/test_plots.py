"""The benchmarks' pictures: the numbers behind each curve, and the PNG files written."""

import os
import shutil

import pytest

from benchmarks import plots
from benchmarks.lib import storm_report as attach_report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(plots.__file__)))
ATTACH = os.path.join(REPO, "benchmarks/results/2026-12-01-attach-storm.md")
BOOT = os.path.join(REPO, "benchmarks/results/2026-11-30-boot-storm.md")
RECONCILE = os.path.join(REPO, "benchmarks/results/2026-11-30-reconcile-walk.md")
PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == PNG and os.path.getsize(path) > 5000


def test_cdf_and_quantile_points():
    assert plots.cdf_points([0.3, 0.1, 0.2, 0.4]) == [(0.1, 0.25), (0.2, 0.5), (0.3, 0.75),
                                                      (0.4, 1.0)]
    assert plots.quantile_points(p99=1.5, p50=0.9, max=None) == [(0.9, 0.5), (1.5, 0.99)]


def test_in_flight_counts_requests_sent_and_not_answered():
    spans = [(0.0, 1.0), (0.5, 2.0), (1.5, 1.6)]
    assert plots.in_flight(spans, [0.0, 0.6, 1.0, 1.55, 2.0]) == [1, 2, 1, 2, 0]


def test_cpu_rates_are_cores_busy_between_samples():
    samples = [(0.0, {"api": 1.0, "compute": 0.0}), (0.5, {"api": 1.5, "compute": 0.1}),
               (1.5, {"api": 1.5, "compute": 2.1})]
    times, rates = plots.cpu_rates(samples)
    assert times == [0.5, 1.5]
    assert rates == {"api": [1.0, 0.0], "compute": pytest.approx([0.2, 2.0])}


def test_the_results_files_quantiles_are_read_with_nova_beside_ours():
    with open(ATTACH) as f:
        shapes = plots.attach_comparisons(f.read())
    c = shapes[("2.101", 100, 2.0)]
    assert c["ours"] == [(0.97, 0.5), (1.51, 0.99)]
    assert c["nova"] == [(1.24, 0.5), (2.42, 0.99)]
    assert c["ours_get"] == [(0.01, 0.5), (0.14, 0.99)]
    assert c["nova_get"] == [(2.18, 0.99)]  # that day's table had no Nova GET p50
    with open(BOOT) as f:
        rows = plots.boot_rows(f.read())
    assert rows[(100, "ours")] == [(19.43, 0.5), (29.17, 0.99), (29.65, 1.0)]
    assert rows[(100, "Nova 34")] == [(52.4, 0.5), (87.5, 0.99), (88.1, 1.0)]


def test_pictures_of_the_results_files(tmp_path):
    for path in (ATTACH, BOOT, RECONCILE):
        shutil.copy(path, tmp_path)
    written = plots.from_results(str(tmp_path))
    assert [os.path.basename(p) for p in written] == [
        "2026-12-01-attach-storm-n100-2.101-delay2-quantiles.png",
        "2026-11-30-boot-storm-active-quantiles.png"]
    assert all(_is_png(p) for p in written)


def test_pictures_of_a_storms_raw_data(tmp_path):
    latencies = [0.5 + i / 100 for i in range(100)]
    run = {"version": "2.101", "n": 100, "delay": 2.0, "latencies": latencies,
           "probe": [0.01] * 50 + [0.1] * 10,
           "spans": [(i / 100, i / 100 + lat) for i, lat in enumerate(latencies)],
           "done_at": [2.0 + i / 50 for i in range(100)],
           "cpu_samples": [(t / 2, {"api": t * 0.2, "compute": t * 0.1}) for t in range(10)]}
    summary = {"date": "2026-12-02T13:00:00+00:00", "runs": [run]}
    written = plots.attach_storm_pictures(str(tmp_path), summary, attach_report.NOVA)
    assert [os.path.basename(p) for p in written] == [
        "2026-12-02-attach-storm-n100-2.101-latency.png",
        "2026-12-02-attach-storm-n100-2.101-timeline.png"]
    assert all(_is_png(p) for p in written)
    boot = {"date": "2026-12-02T13:00:00+00:00",
            "runs": [{"n": 20, "to_active": [1.0 + i / 10 for i in range(19)]}]}
    path, = plots.boot_storm_pictures(str(tmp_path), boot, {20: (1, 2, 9.3, 13.8, 13.9)})
    assert os.path.basename(path) == "2026-12-02-boot-storm-active.png" and _is_png(path)
