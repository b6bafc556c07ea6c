"""PNG pictures of the benchmarks, written next to their results files.

Why pictures: a table gives two quantiles; a curve shows the whole
distribution, where Nova's same-day run lies beside ours, and how a storm
went over time. Each picture is a PNG in ``benchmarks/results/`` named after
the results file it belongs to (``<date>-<topic>-<what>.png``).

Two sources:

* a storm script's raw data, at the end of its run (:func:`attach_storm_pictures`,
  :func:`boot_storm_pictures`): every attach's and every probe GET's latency,
  each request's start and answer, CPU seconds per process sampled during the
  storm, each server's time to ACTIVE;
* the results files already written (``python -m benchmarks.plots``), which
  keep quantiles only (p50, p99, max): their curves are drawn through those
  points, ours and Nova's of the same day.

matplotlib (the ``benchmarks`` extra) is imported only when drawing, with
its file-only backend.
"""

import argparse
import glob
import os
import re
import sys

from benchmarks.lib import report

# Nova's curve: dashed, beside ours (solid).
NOVA_STYLE = {"linestyle": "--", "marker": "o"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def cdf_points(values):
    """Empirical CDF of ``values``: [(value, fraction of values <= it)], sorted."""
    ordered = sorted(values)
    n = len(ordered)
    return [(v, (i + 1) / n) for i, v in enumerate(ordered)]


def quantile_points(**quantiles):
    """``p50=0.97, p99=1.51, max=...`` as CDF points [(seconds, fraction)] (None skipped)."""
    fractions = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "max": 1.0}
    return sorted((value, fractions[name]) for name, value in quantiles.items()
                  if value is not None)


def _cdf_figure(curves, nova, quantiles):
    """(figure, axes) with ours and Nova's curves drawn.

    Raw CDFs as steps; quantile points (a results file's p50, p99) joined by
    lines; Nova's dashed.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, points in curves.items():
        if points and quantiles:
            ax.plot(*zip(*points, strict=True), label=label, marker="s")
        elif points:
            ax.step(*zip(*points, strict=True), where="post", label=label)
    for label, points in (nova or {}).items():
        if points:
            ax.plot(*zip(*points, strict=True), label=label, **NOVA_STYLE)
    return fig, ax


def latency_cdf(path, title, curves, *, nova=None, xlabel="latency (s)", quantiles=False):
    """One CDF per ``curves`` entry (label -> points); ``nova``: Nova's, dashed.

    ``quantiles``: the points are a few quantiles, not every request.
    """
    fig, ax = _cdf_figure(curves, nova, quantiles)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return _save(fig, path)


def in_flight(spans, times):
    """Requests sent and not answered at each of ``times`` (``spans``: (sent, answered))."""
    return [sum(1 for sent, answered in spans if sent <= t < answered) for t in times]


def cpu_rates(samples):
    """CPU cores busy per process between samples: ([t], {name: [cores]}).

    ``samples``: [(t, {name: cumulative CPU seconds})], as the storms sample them.
    """
    times, rates = [], {}
    for (t0, before), (t1, after) in zip(samples, samples[1:], strict=False):
        if t1 <= t0:
            continue
        times.append(t1)
        for name, value in after.items():
            rates.setdefault(name, []).append(max(0.0, (value - before.get(name, 0.0))
                                                  / (t1 - t0)))
    return times, rates


def storm_timeline(path, title, *, spans, done_at=(), cpu_samples=(), processes=None):
    """In-flight requests (and work not done yet) over time, CPU per process below it."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    end = max([a for _, a in spans] + list(done_at) + [t for t, _ in cpu_samples] + [1.0])
    times = [end * i / 200 for i in range(201)]
    top.plot(times, in_flight(spans, times), label="requests in flight")
    if done_at:
        top.plot(times, [len(spans) - sum(1 for d in done_at if d <= t) for t in times],
                 label="sent, volume not in use yet")
    top.set_ylabel("requests")
    top.legend(loc="upper right", fontsize="small")
    top.grid(True, alpha=0.3)
    top.set_title(title)
    t_cpu, rates = cpu_rates(list(cpu_samples))
    for name, values in rates.items():
        if processes is None or name in processes:
            bottom.plot(t_cpu, values, label=name)
    bottom.set_xlabel("seconds since the storm started")
    bottom.set_ylabel("CPU (cores)")
    bottom.grid(True, alpha=0.3)
    if rates:
        bottom.legend(loc="upper right", fontsize="x-small", ncol=2)
    return _save(fig, path)


def active_over_time(path, title, curves, *, nova=None, quantiles=False):
    """Fraction of a boot storm's servers ACTIVE over time, per storm size."""
    fig, ax = _cdf_figure(curves, nova, quantiles)
    ax.set_xlabel("seconds since the storm started")
    ax.set_ylabel("fraction of servers ACTIVE")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return _save(fig, path)


def _save(fig, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    _pyplot().close(fig)
    return path


# -- from a storm's raw data ----------------------------------------------------------


def picture_path(results_dir, date, topic, what):
    """``<results_dir>/<YYYY-MM-DD>-<topic>-<what>.png`` (``date``: the run's ISO date)."""
    return os.path.join(results_dir, f"{date[:10]}-{topic}-{what}.png")


def attach_storm_pictures(results_dir, summary, nova=None):
    """Per run: attach and GET latency CDFs (Nova's quantiles beside), storm timeline.

    ``nova``: ``{(delay, microversion, N): (attach p50, p99, ..., GET p50, GET p99, ...)}``
    as ``storm_report.NOVA``. Returns the paths written.
    """
    written = []
    for r in summary["runs"]:
        what = f"n{r['n']}-{r['version']}"
        title = f"attach storm N={r['n']} at {r['version']}, {summary['date'][:10]}"
        anchor = (nova or {}).get((float(r["delay"]), r["version"], r["n"]))
        nova_curves = {}
        if anchor:
            nova_curves = {
                "Nova 34 attach (p50, p99)": quantile_points(p50=anchor[0], p99=anchor[1]),
                "Nova 34 GET (p50, p99)": quantile_points(p50=anchor[3], p99=anchor[4])}
        written.append(latency_cdf(
            picture_path(results_dir, summary["date"], "attach-storm", f"{what}-latency"),
            title, {"volumesvc attach POST": cdf_points(r["latencies"]),
                    "volumesvc GET during the storm": cdf_points(r["probe"])},
            nova=nova_curves))
        if r.get("spans"):
            written.append(storm_timeline(
                picture_path(results_dir, summary["date"], "attach-storm", f"{what}-timeline"),
                title, spans=r["spans"], done_at=r.get("done_at", ()),
                cpu_samples=r.get("cpu_samples", ())))
    return written


def boot_storm_pictures(results_dir, summary, nova=None):
    """Fraction ACTIVE over time for every storm size, Nova's quantiles beside."""
    curves, nova_curves = {}, {}
    for r in summary["runs"]:
        curves[f"volumesvc N={r['n']}"] = [
            (t, f * len(r["to_active"]) / r["n"]) for t, f in cdf_points(r["to_active"])]
        anchor = (nova or {}).get(r["n"])
        if anchor:
            nova_curves[f"Nova 34 N={r['n']} (p50, p99, max)"] = quantile_points(
                p50=anchor[2], p99=anchor[3], max=anchor[4])
    return [active_over_time(
        picture_path(results_dir, summary["date"], "boot-storm", "active"),
        f"boot storm, servers ACTIVE over time, {summary['date'][:10]}", curves,
        nova=nova_curves)]


# -- from the results files --------------------------------------------------------------

_ATTACH_LINE = re.compile(
    r"^- (?P<mv>2\.\d+), N=(?P<n>\d+), (?P<delay>[\d.]+) s: attach p99 (?P<p99>[\d.]+) s "
    r"vs Nova (?P<np99>[\d.]+) s.*?p50 (?P<p50>[\d.]+) vs (?P<np50>[\d.]+) s.*?"
    r"GET p99 (?P<g99>[\d.]+) s vs (?P<ng99>[\d.]+) s \(p50 (?P<g50>[\d.]+)"
    r"(?: vs (?P<ng50>[\d.]+))?\)", re.MULTILINE)
_BOOT_ROW = re.compile(
    r"^\| (?P<n>\d+) \| (?P<who>ours|Nova 34) \| [^|]+\| (?P<p50>[\d.]+) / (?P<p99>[\d.]+) / "
    r"(?P<max>[\d.]+) s \|", re.MULTILINE)


def _f(value):
    return float(value) if value is not None else None


def attach_comparisons(text):
    """The "ours vs Nova" lines of an attach-storm results file; the last of each shape."""
    found = {}
    for m in _ATTACH_LINE.finditer(text):
        found[(m["mv"], int(m["n"]), float(m["delay"]))] = {
            "ours": quantile_points(p50=_f(m["p50"]), p99=_f(m["p99"])),
            "nova": quantile_points(p50=_f(m["np50"]), p99=_f(m["np99"])),
            "ours_get": quantile_points(p50=_f(m["g50"]), p99=_f(m["g99"])),
            "nova_get": quantile_points(p50=_f(m["ng50"]), p99=_f(m["ng99"]))}
    return found


def boot_rows(text):
    """``{(N, "ours" | "Nova 34"): CDF points (p50, p99, max)}`` of a boot-storm file."""
    return {(int(m["n"]), m["who"]): quantile_points(p50=_f(m["p50"]), p99=_f(m["p99"]),
                                                     max=_f(m["max"]))
            for m in _BOOT_ROW.finditer(text)}


def from_results(results_dir):
    """Pictures of every results file whose figures can be drawn; the paths written."""
    written = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*-attach-storm.md"))):
        stem = path[:-len(".md")]
        with open(path) as f:
            shapes = attach_comparisons(f.read())
        for (mv, n, delay), c in shapes.items():
            written.append(latency_cdf(
                f"{stem}-n{n}-{mv}-delay{delay:g}-quantiles.png",
                f"attach storm N={n} at {mv}, {os.path.basename(stem)[:10]} (p50, p99)",
                {"volumesvc attach POST": c["ours"], "volumesvc GET during the storm":
                 c["ours_get"]},
                nova={"Nova 34 attach": c["nova"], "Nova 34 GET": c["nova_get"]},
                quantiles=True))
    for path in sorted(glob.glob(os.path.join(results_dir, "*-boot-storm.md"))):
        stem = path[:-len(".md")]
        with open(path) as f:
            rows = boot_rows(f.read())
        if not rows:
            continue
        written.append(active_over_time(
            f"{stem}-active-quantiles.png",
            f"boot storm, servers ACTIVE over time, {os.path.basename(stem)[:10]} "
            "(p50, p99, max)",
            {f"volumesvc N={n}": p for (n, who), p in rows.items() if who == "ours"},
            nova={f"Nova 34 N={n}": p for (n, who), p in rows.items() if who != "ours"},
            quantiles=True))
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.plots",
        description="Draw the pictures of the results files (quantile curves, ours and "
                    "Nova's same day) next to them.")
    parser.add_argument("--results", default=report.RESULTS_DIR, metavar="DIR",
                        help="the results directory (default: benchmarks/results)")
    args = parser.parse_args(argv)
    for path in from_results(args.results):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
