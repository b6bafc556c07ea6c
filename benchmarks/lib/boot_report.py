"""Tables for the boot storm: console lines, Markdown block, its results file."""

from benchmarks.lib import report
from benchmarks.lib.report import goal as _goal
from benchmarks.lib.report import lat as _lat
from benchmarks.lib.report import num as _s
from benchmarks.lib.storm_metrics import percentile

# Nova's same-day figures for the boot-from-volume storm with a volume type
# (doc/source/contributor/performance.rst; Nova 34, 4 sync API workers): N -> (POST
# p50, p99; to ACTIVE p50, p99, max; ERROR; servers/s; GET during storm p50, p99;
# delete all + volumes gone), seconds.
NOVA = {
    20: (0.99, 1.75, 9.3, 13.8, 13.9, 0, 1.44, 0.057, 1.5, 4.8),
    50: (3.54, 8.73, 28.7, 42.9, 43.1, 0, 1.16, 0.060, 8.5, 12.8),
    100: (5.32, 9.10, 52.4, 87.5, 88.1, 0, 1.14, 0.041, 8.5, 31.6),
}
OURS = ("api", "conductor", "compute")
CINDER = ("cinder-api", "cinder-scheduler", "cinder-volume")
MARK = "<!-- boot_storm {key} -->"
END = "<!-- /boot_storm -->"
# The benchmark's own Cinder requests (volume-type checks, volume lists) are not per boot.
OWN_CALLS = ("GET /v3/volumes/detail",)


def _three(values):
    if not values:
        return "—"
    return " / ".join(f"{percentile(values, p):.2f}" for p in (50, 99, 100)) + " s"


def clean(r):
    d = r.get("delete") or {}
    return (not r["errors"] and not r["post_errors"] and not r["unfinished"]
            and r["volumes"] == {"gold": r["n"]} and d.get("all_gone") is not None)


def run_line(r):
    return (f"N={r['n']}: POST {_lat(r['post'])}, to ACTIVE p50/p99/max {_three(r['to_active'])}"
            f", all ACTIVE after {_s(r['all_active_after'])} s ({_s(r['rate'], 2)}/s), "
            f"ERROR {len(r['errors'])}, POST errors {len(r['post_errors'])}, unfinished "
            f"{r['unfinished']}, volumes {r['volumes']}, GET during storm {_lat(r['probe'])} "
            f"({r['probe_failed']} failed), cpu "
            + ", ".join(f"{k} {v:.1f}" for k, v in r["cpu"].items()))


def delete_line(d):
    return (f"delete {d['servers']} servers: gone after {_s(d['servers_gone'])} s, their "
            f"{d['volumes']} volumes after {_s(d['volumes_gone'])} s; failures "
            f"{len(d['failures'])}, left {d['left_servers']} servers / {d['left_volumes']} "
            "volumes")


def cinder_per_boot(r):
    calls = {k: v for k, v in r["cinder_calls"].items() if k not in OWN_CALLS}
    return sum(calls.values()) / r["n"], calls


def markdown(s):
    idle_p50, idle_p99 = percentile(s["idle"], 50), percentile(s["idle"], 99)
    lines = [
        f"### N={','.join(str(r['n']) for r in s['runs'])}, {s['workers']} API workers × "
        f"{s['api_threads']} threads — {s['date']}", "",
        "```", "python -m benchmarks.boot_storm " + " ".join(s["argv"]), "```", "",
        f"volumesvc at `{(s.get('commit') or 'working tree')[:12]}`; load average at the end "
        f"{', '.join(f'{x:.1f}' for x in s['loadavg'])} (other users share the machine). "
        f"Idle `GET /servers/{{id}}`: p50 {idle_p50 * 1000:.0f} ms, p99 "
        f"{idle_p99 * 1000:.0f} ms.", "",
        "| N | | POST p50 / p99 | To ACTIVE p50 / p99 / max | ERROR | Servers/s to ACTIVE "
        "| GET during storm p50 / p99 | Delete all + volumes gone |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in s["runs"]:
        d = r["delete"]
        lines.append(
            f"| {r['n']} | ours | {_lat(r['post'])} | {_three(r['to_active'])} | "
            f"{len(r['errors'])} | {_s(r['rate'], 2)} | {_lat(r['probe'])} | "
            f"{_s(d['all_gone'])} s |")
        nova = NOVA.get(r["n"])
        if nova:
            lines.append(
                f"| {r['n']} | Nova 34 | {nova[0]:.2f} s / {nova[1]:.2f} s | {nova[2]} / "
                f"{nova[3]} / {nova[4]} s | {nova[5]} | {nova[6]} | {nova[7] * 1000:.0f} ms / "
                f"{nova[8]} s | {nova[9]} s |")
    lines += ["", "CPU seconds per boot (storm start until every server ACTIVE or ERROR; raw, "
              "including the probe and the benchmark's server-list polls) and Cinder requests "
              "per boot:", "",
              "| N | api | conductor | compute | cinder-api | cinder-scheduler | cinder-volume "
              "| shared daemons | load generator | machine busy | Cinder requests per boot |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["runs"]:
        c, n = r["cpu"], r["n"]
        per_boot, _ = cinder_per_boot(r)
        lines.append(
            f"| {n} | " + " | ".join(f"{c.get(k, 0.0) / n:.3f}" for k in OURS + CINDER)
            + f" | {c['shared daemons']:.1f} s | {c['load generator']:.1f} s | "
            f"{c['machine']:.1f} s in {r['window']:.0f} s | {per_boot:.1f} |")
    lines += ["", "Cinder requests (boot storm; delete):", ""]
    for r in s["runs"]:
        _, calls = cinder_per_boot(r)
        dcalls = r["delete"]["cinder_calls"]
        lines.append(f"- N={r['n']}: " + ", ".join(
            f"`{k}` {v}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1]))
            + "; delete: " + ", ".join(f"`{k}` {v}" for k, v in sorted(
                dcalls.items(), key=lambda kv: -kv[1]) if k not in OWN_CALLS))
    lines += ["", *compare(s, idle_p99), ""]
    return "\n".join(lines)


def compare(s, idle_p99):
    out = ["Goals (against Nova's same-day figures, doc/source/contributor/performance.rst) "
           "and checks:", ""]
    for r in s["runs"]:
        d = r["delete"]
        head = f"- N={r['n']}: "
        vols = r["volumes"]
        typed = vols == {"gold": r["n"]}
        parts = [f"ERROR 0 {_goal(not r['errors'] and not r['unfinished'])} "
                 f"({len(r['errors'])} ERROR, {r['unfinished']} never finished, "
                 f"{len(r['post_errors'])} failed POSTs)",
                 f"every volume of type gold in Cinder {_goal(typed)} ({vols})"]
        g99 = percentile(r["probe"], 99)
        if g99 is not None:
            parts.append(f"GET during storm p99 ≤ 10× idle p99 ({10 * idle_p99:.2f} s) "
                         f"{_goal(g99 <= 10 * idle_p99)} ({g99:.2f} s, "
                         f"{g99 / idle_p99:.0f}×)")
        nova = NOVA.get(r["n"])
        if nova:
            limit = nova[4] / 5
            got = r["all_active_after"]
            parts.append(f"all ACTIVE ≤ 1/5 of Nova's ({limit:.1f} s) "
                         f"{_goal(got is not None and got <= limit)} ({_s(got)} s)")
            dlimit = nova[9] / 3
            parts.append(f"delete all + volumes gone ≤ 1/3 of Nova's ({dlimit:.1f} s) "
                         f"{_goal(d['all_gone'] is not None and d['all_gone'] <= dlimit)} "
                         f"({_s(d['all_gone'])} s)")
        out.append(head + "; ".join(parts) + ".")
        for server_id, message in r["faults"].items():
            out.append(f"  - ERROR {server_id}: {message}")
        for error in r["post_errors"][:5]:
            out.append(f"  - POST failed: {error}")
        for error in d["failures"][:5]:
            out.append(f"  - DELETE failed: {error}")
    return out


TITLE = "Boot storm"


def write(results_dir, summary, text, readme=report.README):
    """The run's block into the day's boot-storm file; its path."""
    key = f"n={','.join(str(r['n']) for r in summary['runs'])} workers={summary['workers']}"
    return report.write_result(results_dir, date=summary["date"], topic="boot-storm",
                               title=TITLE, mark=MARK.format(key=key), end=END, text=text,
                               readme=readme)
