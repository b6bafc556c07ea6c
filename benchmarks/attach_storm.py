"""Attach storm: N concurrent volume attaches at 2.100 (blocking) and 2.101 (async).

Volume *i* is attached to server *i*, all N requests in flight at once, while
a probe sends ``GET /servers/{id}`` 5 times a second: the workload of Nova's
same-day figures (``doc/source/contributor/performance.rst``). Everything
runs as separate processes on this machine (see ``storm_stack``); the load
generator (this process, threads) shares the cores with them.

Run from the repository root (about 6 minutes for N=100 at 2.100 and 2.101)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.attach_storm --servers 100 --delay 2 \\
        --workers 4 --microversions 2.100,2.101

It prints a table and adds (or replaces) the run's block in
``benchmarks/results/<date>-attach-storm.md``, linked from the README's
index (``--no-results`` to skip). Ctrl-C stops and removes everything it
started: processes, databases, RabbitMQ vhosts, state dir.
"""

import argparse
import concurrent.futures
import contextlib
import datetime
import os
import signal
import sys
import threading
import time
import urllib.request

from benchmarks.lib import report as results
from benchmarks.lib import storm_metrics as metrics
from benchmarks.lib import storm_report as report
from benchmarks.lib.storm_client import (
    PSS_SETTLE,
    Client,
    Probe,
    boot_servers,
    check,
    idle_gets,
    log,
    run_script,
    self_cpu,
    settle_api,
)
from benchmarks.lib.storm_stack import Stack

# --- setup: servers and volumes (not measured) ----------------------------------------------

def create_volumes(client, count, timeout, volume_type=None):
    """``count`` available 1 GiB volumes, of ``volume_type`` (default: Cinder's default type).

    The type is for ``benchmarks.aio_storage``, which runs the storm on the
    all-in-one's ``rbd`` and ``file`` types side by side.
    """
    # Cinder's default quota is 10 volumes per project.
    status, body = client.cinder("PUT", "/os-quota-sets/admin", body={
        "quota_set": {"volumes": -1, "gigabytes": -1, "snapshots": -1}})
    check(status, body, (200,), "Cinder quota update")
    def create(i):
        volume = {"size": 1, "name": f"storm-vol-{i}"}
        if volume_type:
            volume["volume_type"] = volume_type
        status, body = client.cinder("POST", "/volumes", body={"volume": volume})
        check(status, body, (202,), "volume create")
        return body["volume"]["id"]

    # NOTE: one create at a time, 10 per batch, each batch available before the next: a
    # burst of concurrent creates makes cinder-scheduler open ~150 MariaDB connections
    # (whatever max_pool_size says) and exhausts the server for everyone on the machine.
    ids = []
    for first in range(0, count, 10):
        batch = [create(i) for i in range(first, min(count, first + 10))]
        with contextlib.suppress(TimeoutError):
            wait_volumes(client, batch, ("available", "error"), min(timeout, 60))
        ids += batch
    for _ in range(3):  # a volume in error or stuck creating is replaced, at most 3 rounds
        with contextlib.suppress(TimeoutError):
            wait_volumes(client, ids, ("available", "error"), min(timeout, 60))
        statuses = client.volume_statuses()
        bad = [i for i, v in enumerate(ids) if statuses.get(v) != "available"]
        if not bad:
            return ids
        log(f"{len(bad)} volumes in error or stuck creating; replacing them")
        for i in bad:
            client.cinder("POST", f"/volumes/{ids[i]}/action",
                          body={"os-reset_status": {"status": "error"}})
            client.cinder("DELETE", f"/volumes/{ids[i]}")
            ids[i] = create(i)
    raise RuntimeError("volumes keep going to error")


def wait_volumes(client, ids, wanted, timeout):
    deadline = time.monotonic() + timeout
    while True:
        statuses = client.volume_statuses()
        mine = [statuses.get(v) for v in ids]
        wanted = (wanted,) if isinstance(wanted, str) else wanted
        if any(s and s.startswith("error") and s not in wanted for s in mine):
            raise RuntimeError(f"volumes in error: {sorted(set(mine))}")
        if all(s in wanted for s in mine):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"volumes not {wanted} after {timeout}s: {sorted(set(mine))}")
        time.sleep(1.0)


def detach_all(client, servers, volumes, timeout, rounds=3):
    """Detach volume *i* from server *i*; asked again for a volume still in-use.

    A guest busy enough may not let go of a disk within the compute's wait, so
    the detach fails and the volume stays in-use (as in Nova); an operator
    asks again, and so does this, at most ``rounds`` times in all.
    """
    pairs = list(zip(servers, volumes, strict=True))
    statuses = client.volume_statuses()

    def detach(pair):
        server, volume = pair
        status, body = client.api("DELETE", f"/servers/{server}/os-volume_attachments/{volume}")
        check(status, body, (202, 404), "detach")

    def in_use(statuses):
        # A failed background attach was rolled back: nothing to detach there.
        return [pair for pair in pairs if statuses.get(pair[1]) == "in-use"]

    todo = in_use(statuses)
    end = time.monotonic() + timeout
    for attempt in range(rounds):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(detach, todo))
        # What is left of the time, shared among the rounds still to come.
        wait = (end - time.monotonic()) / (rounds - attempt)
        try:
            wait_volumes(client, volumes, "available", max(wait, 1.0))
            break
        except TimeoutError:
            todo = in_use(client.volume_statuses())
            if attempt == rounds - 1 or not todo:
                raise
            log(f"{len(todo)} volumes still in-use after their detach; detaching them again")
    deadline = time.monotonic() + timeout
    pending = list(servers)
    while pending and time.monotonic() < deadline:
        still = []
        for server in pending:
            status, body = client.api("GET", f"/servers/{server}/os-volume_attachments")
            if status != 200 or body["volumeAttachments"]:
                still.append(server)
        pending = still
        if pending:
            time.sleep(1.0)
    if pending:
        raise TimeoutError(f"{len(pending)} servers still list attachments after detach")


# --- measurements ------------------------------------------------------------------------

STATUS_VERSION = "2.106"  # the first microversion whose attachments carry a status


class StatusPoller:
    """A client that knows only the compute API: polls ``os-volume_attachments`` at 2.106.

    One sweep per ``interval`` (scheduled, like the Cinder poll beside it)
    GETs the attachment list of every server whose volume it has not yet
    seen ``attached``, a few requests at a time, and records the first time
    each volume shows ``attached``. ``attaching`` sightings are counted, so
    a run shows the client really saw the transition, and any ``error``
    entry is kept with its fault.
    """

    def __init__(self, client, servers, volumes, interval, timeout, threads=4):
        self.client, self.interval, self.timeout = client, interval, timeout
        self.volume_of = dict(zip(servers, volumes, strict=True))
        self.attached_at = {}  # volume -> monotonic time first seen "attached"
        self.attaching_seen = set()
        self.errors = {}  # volume -> fault
        self.failed_requests = 0
        self.sweeps = 0
        self.sweep_started = []
        self._lock = threading.Lock()
        self.stop_event = threading.Event()
        self.pool = concurrent.futures.ThreadPoolExecutor(threads)
        self.runner = threading.Thread(target=self._run, daemon=True)

    def _one(self, server):
        volume = self.volume_of[server]
        sent = time.monotonic()
        try:
            status, body = self.client.api("GET", f"/servers/{server}/os-volume_attachments",
                                           version=STATUS_VERSION, timeout=self.timeout)
        except Exception:  # noqa: BLE001 - counted, the next sweep asks again
            status, body = None, None
        # The answer describes some moment between sending and receiving it.
        now = (sent + time.monotonic()) / 2
        if status != 200:
            with self._lock:  # the pool's threads count together
                self.failed_requests += 1
            return
        for entry in body["volumeAttachments"]:
            if entry["volumeId"] != volume:
                continue
            if entry["status"] == "attached" and "fault" not in entry:
                self.attached_at.setdefault(volume, now)
            elif entry["status"] == "attaching":
                self.attaching_seen.add(volume)
            elif entry["status"] == "error":
                self.errors[volume] = entry.get("fault")

    def _run(self):
        start = time.monotonic()
        while not self.stop_event.is_set() and self.sweeps < 100000:
            pending = [s for s, v in self.volume_of.items() if v not in self.attached_at]
            if not pending:
                break
            self.sweep_started.append(time.monotonic())
            list(self.pool.map(self._one, pending))
            self.sweeps += 1
            next_at = start + self.sweeps * self.interval
            delay = next_at - time.monotonic()
            if delay > 0 and self.stop_event.wait(delay):
                break

    def start(self):
        self.runner.start()

    def stop(self, timeout):
        self.runner.join(timeout)
        self.stop_event.set()
        self.runner.join(self.timeout + 5)
        self.pool.shutdown(wait=True)


def _mean_gap(times):
    """Mean seconds between consecutive polls: the resolution they really had."""
    if len(times) < 2:
        return None
    return (times[-1] - times[0]) / (len(times) - 1)


def _since_answer(results, volumes, seen_at):
    """Per attach: seconds from its 202 (the answer) until ``seen_at[volume]``."""
    return [seen_at[v] - r[1] for r, v in zip(results, volumes, strict=True)
            if r is not None and not r[2] and v in seen_at]


def storm(client, stack, servers, volumes, probe_server, version, args):
    n = len(servers)
    expected = 202 if _mv(version) >= _mv("2.101") else 200
    results = [None] * n
    barrier = threading.Barrier(n + 1, timeout=120)

    def attach(i):
        barrier.wait()
        t0 = time.monotonic()
        try:
            status, body = client.api(
                "POST", f"/servers/{servers[i]}/os-volume_attachments", version=version,
                body={"volumeAttachment": {"volumeId": volumes[i]}},
                timeout=args.client_timeout)
            error = None if status == expected else f"HTTP {status}: {str(body)[:200]}"
        except Exception as exc:  # noqa: BLE001 - recorded as a failure
            error = repr(exc)
        results[i] = (t0, time.monotonic(), error)

    threads = [threading.Thread(target=attach, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    groups = {**stack.our_groups(), **stack.cinder_groups()}
    offset = metrics.log_size(stack.cinder_api_log)
    cpu0, self0 = metrics.snapshot(groups), self_cpu()
    probe = Probe(client, probe_server, args.client_timeout)
    poller = None
    if args.status_poll and _mv(version) >= _mv("2.101"):
        poller = StatusPoller(client, servers, volumes, args.poll_interval, args.client_timeout)
    sampler = metrics.ConnectionSampler(_database_urls(stack)).start()
    before = scrape_counts(stack, version)
    barrier.wait()
    t_start = time.monotonic()
    cpu_sampler = metrics.CpuSampler(groups).start(t_start)
    probe.start()
    if poller:
        poller.start()
    # Poll Cinder until every volume is in-use (bounded in time and count).
    in_use_at, polls, last, in_use_seen, poll_started = None, 0, {}, {}, []
    deadline = t_start + args.storm_timeout
    changed_at, previous = time.monotonic(), None
    while time.monotonic() < deadline and polls < 100000:
        polls += 1
        sent = time.monotonic()
        statuses = client.volume_statuses()
        mine = [statuses.get(v) for v in volumes]
        # Under a storm one list waits seconds in cinder-api's queue: the statuses
        # describe a moment between sending and receiving it, not the receipt.
        now = (sent + time.monotonic()) / 2
        poll_started.append(sent)
        for v, s in zip(volumes, mine, strict=True):
            if s == "in-use":
                in_use_seen.setdefault(v, now)
        last = {s: mine.count(s) for s in set(mine)}
        if last.get("in-use", 0) == n:
            in_use_at = time.monotonic() - t_start
            break
        if mine != previous:
            changed_at, previous = time.monotonic(), mine
        answered = all(r is not None for r in results)
        if answered and all(r[2] for r in results):
            break  # every request failed: nothing will become in-use
        if answered and time.monotonic() - changed_at > args.stall_timeout:
            log(f"no volume changed status for {args.stall_timeout:.0f}s: {last}")
            break  # some attaches failed in the background (2.101) and were rolled back
        time.sleep(args.poll_interval)
    for t in threads:
        t.join(max(1.0, deadline - time.monotonic()))
    probe_ok, probe_failed = probe.stop()
    connections = sampler.stop()
    cpu_samples = cpu_sampler.stop()
    status = None
    if poller:
        poller.stop(max(1.0, deadline - time.monotonic()))
        status = {
            "api_attached": _since_answer(results, volumes, poller.attached_at),
            "cinder_in_use": _since_answer(results, volumes, in_use_seen),
            "attaching_seen": len(poller.attaching_seen), "errors": poller.errors,
            "never_attached": n - len(poller.attached_at), "sweeps": poller.sweeps,
            "failed_requests": poller.failed_requests, "interval": args.poll_interval,
            "api_period": _mean_gap(poller.sweep_started),
            "cinder_period": _mean_gap(poll_started),
        }
    t_end = time.monotonic()
    cpu1, self1 = metrics.snapshot(groups), self_cpu()
    cinder_calls = metrics.cinder_requests(stack.cinder_api_log, offset)
    done = [r for r in results if r is not None]
    latencies = [r[1] - r[0] for r in done if not r[2]]
    errors = [r[2] for r in done if r[2]] + ["no answer"] * (n - len(done))
    last_answer = max((r[1] for r in done), default=t_start) - t_start
    cpu = metrics.delta(cpu0, cpu1)
    cpu["load generator"] = self1 - self0
    return {
        "version": version, "n": n, "delay": args.delay, "latencies": latencies,
        "errors": errors, "last_answer": last_answer,
        "rate": (len(latencies) / last_answer) if last_answer > 0 else None,
        "probe": probe_ok, "probe_failed": probe_failed, "in_use_after": in_use_at,
        "final_statuses": last, "not_in_use": n - last.get("in-use", 0),
        "window": t_end - t_start, "cpu": cpu,
        "cinder_calls": cinder_calls, "volume_list_polls": polls, "status": status,
        "db_connections": connections,
        # For the pictures (benchmarks/plots.py): each request's sending and answer and
        # each volume's in-use, in seconds since the storm started; CPU per process.
        "spans": [(r[0] - t_start, r[1] - t_start) for r in done],
        "done_at": [t - t_start for t in in_use_seen.values()],
        "cpu_samples": cpu_samples,
        "scraped": _delta(before, scrape_counts(stack, version)),
    }


ATTACH_ROUTE = "/v2.1/servers/{server_id}/os-volume_attachments"


def scrape_counts(stack, version):
    """What our processes' metrics count so far (``--metrics``), or {} without them.

    The API's attach POSTs answered 202 at ``version`` (its histogram's count for
    the route) and the compute's successful attaches; a storm's are the difference.
    """
    if not stack.metrics_urls:
        return {}
    from prometheus_client import parser

    def count(url, family, **labels):
        with urllib.request.urlopen(url, timeout=30) as resp:
            text = resp.read().decode()
        return sum(s.value for f in parser.text_string_to_metric_families(text)
                   if f.name == family for s in f.samples if s.name.endswith("_count")
                   and all(s.labels.get(k) == v for k, v in labels.items()))

    accepted = "202" if _mv(version) >= _mv("2.101") else "200"
    return {
        "api_attach_accepted": count(stack.metrics_urls["api"],
                                     "volumesvc_api_request_duration_seconds",
                                     route=ATTACH_ROUTE, method="POST", status=accepted,
                                     microversion=version),
        "compute_attach_success": count(stack.metrics_urls["compute"],
                                        "volumesvc_compute_operation_duration_seconds",
                                        operation="attach_volume", result="success"),
    }


def scraped_lines(runs):
    """What the metrics counted per storm (``--metrics``), for the results block."""
    lines = [f"- {r['version']}, N={r['n']}: the API's histogram counts "
             f"{r['scraped']['api_attach_accepted']:g} attach POSTs answered "
             f"{'202' if _mv(r['version']) >= _mv('2.101') else '200'}, the compute "
             f"{r['scraped']['compute_attach_success']:g} successful attaches"
             for r in runs if r.get("scraped")]
    if not lines:
        return ""
    return "\n\nWhat the services' Prometheus metrics counted during each storm:\n\n" + \
        "\n".join(lines) + "\n"


def _delta(before, after):
    return {k: after[k] - before.get(k, 0) for k in after}


def _database_urls(stack):
    """volumesvc's PostgreSQL (from the stack's config file) and Cinder's MariaDB URLs."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read(stack.conf_path)
    return {"volumesvc": parser["database"]["connection"],
            "cinder": stack.cinder.database_connection}


def _mv(version):
    return tuple(map(int, version.split(".")))


def calibrate(client, stack, server, idle):
    """Idle CPU rates and the cost of one probe GET and one Cinder volume-list poll."""
    settle_api(client, server)
    groups = {**stack.our_groups(), **stack.cinder_groups()}
    before = metrics.snapshot(groups)
    time.sleep(5.0)
    idle_rate = {k: v / 5.0 for k, v in metrics.delta(before, metrics.snapshot(groups)).items()}
    before = metrics.snapshot(groups)
    idle.extend(idle_gets(client, server))
    spent = metrics.delta(before, metrics.snapshot(groups))
    get_cost = spent["api"] / 200
    before = metrics.snapshot(groups)
    for _ in range(20):
        client.volume_statuses()
    spent = metrics.delta(before, metrics.snapshot(groups))
    list_cost = spent["cinder-api"] / 20
    return {"idle_rate": idle_rate, "get_cost": get_cost, "list_cost": list_cost}


# --- main ---------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--servers", type=int, default=100, help="N: servers, volumes, attaches")
    p.add_argument("--delay", type=float, default=2.0,
                   help="seconds the compute's driver (tests.fixtures.virt."
                        "SlowReserveDriver) takes to "
                        "reserve a device name")
    p.add_argument("--workers", type=int, default=4, help="[wsgi] workers (gunicorn)")
    p.add_argument("--microversions", default="2.100,2.101")
    p.add_argument("--client-timeout", type=float, default=600.0)
    p.add_argument("--storm-timeout", type=float, default=900.0,
                   help="max seconds per storm until all volumes are in-use")
    p.add_argument("--stall-timeout", type=float, default=150.0,
                   help="end a storm when every request was answered and no volume changed "
                        "status for this long (attaches that failed in the background)")
    p.add_argument("--poll-interval", type=float, default=1.0,
                   help="seconds between Cinder volume-list polls during a storm")
    p.add_argument("--ref", default="HEAD",
                   help="git commit of volumesvc to run (exported to the state dir, so edits "
                        "to the working tree during the run do not mix in)")
    results.add_arguments(p)
    p.add_argument("--api-preload", action="store_true",
                   help="experiment: run the API as gunicorn --preload (storm_preload_app.py) "
                        "instead of volumesvc-api")
    p.add_argument("--api-threads", type=int, default=8,
                   help="[wsgi] threads: threads per API worker (gthread; 1 = sync "
                        "workers); volumesvc's default is 8")
    p.add_argument("--status-poll", action="store_true",
                   help="at 2.101 and later, also poll every server's os-volume_attachments "
                        f"at {STATUS_VERSION} once per --poll-interval, as a client that knows "
                        "only the compute API would, and report the time from each 202 to "
                        "`attached` beside the time to Cinder's `in-use`")
    p.add_argument("--no-cpu-priority", dest="cpu_priority", action="store_false",
                   help="lever off: run conductor, compute, Cinder and Glance at the API's "
                        "CPU priority (by default they run lower, as in volumesvc-aio)")
    p.add_argument("--api-max-requests", type=int, default=None, metavar="N",
                   help="[wsgi] max_requests (worker recycling; 0 = off); default: the "
                        "product's")
    p.add_argument("--api-max-requests-jitter", type=int, default=None, metavar="N",
                   help="[wsgi] max_requests_jitter; default: the product's")
    p.add_argument("--api-private-memory-max", type=int, default=None, metavar="MIB",
                   help="[wsgi] worker_private_memory_max (0 = off); default: the product's")
    p.add_argument("--api-read-threads", type=int, default=None, metavar="N",
                   help="[wsgi] read_threads (0: one pool for every request, as gunicorn's "
                        "gthread worker); default: the product's")
    p.add_argument("--keep-state", action="store_true", help="keep the state dir (logs)")
    p.add_argument("--metrics", action="store_true",
                   help="run with [metrics] enabled (off in the product's defaults) and "
                        "report what the API's and the compute's metrics counted per storm")
    p.add_argument("--no-plots", dest="plots", action="store_false",
                   help="write no PNG pictures next to the results (benchmarks/plots.py)")
    args = p.parse_args(argv)
    if not 1 <= args.servers <= 1000:
        p.error("--servers must be 1..1000")
    return args


def _api_options(args):
    """The server options given on the command line (the rest keep their defaults)."""
    options = {}
    if args.api_max_requests is not None:
        options["max_requests"] = args.api_max_requests
    if args.api_max_requests_jitter is not None:
        options["max_requests_jitter"] = args.api_max_requests_jitter
    if args.api_private_memory_max is not None:
        options["worker_private_memory_max"] = args.api_private_memory_max
    if args.api_read_threads is not None:
        options["read_threads"] = args.api_read_threads
    return options


def run(args, argv):
    versions = [v.strip() for v in args.microversions.split(",") if v.strip()]
    stack = Stack(delay=args.delay, api_workers=args.workers, log=log,
                  keep_state=args.keep_state, api_preload=args.api_preload,
                  api_threads=args.api_threads, cpu_priority=args.cpu_priority,
                  api_options=_api_options(args), metrics=args.metrics)
    try:
        t0 = time.monotonic()
        log("starting PostgreSQL db, vhosts, Cinder, Glance, volumesvc api/conductor/compute")
        stack.start(args.ref)
        client = Client(stack.api_url, stack.cinder.url, args.client_timeout)
        log(f"stack ready in {time.monotonic() - t0:.0f}s; booting {args.servers + 1} servers")
        servers = boot_servers(client, stack.image_id, args.servers + 1,
                               timeout=max(600, 2 * args.servers))
        probe_server, servers = servers[0], servers[1:]
        volumes = create_volumes(client, args.servers, timeout=600)
        log(f"{len(servers)} servers ACTIVE, {len(volumes)} volumes available")
        stack.check_alive()
        pss_idle = metrics.pss_mb(stack.our_groups())
        idle = []
        cal = calibrate(client, stack, probe_server, idle)
        log(f"idle GET p50 {metrics.percentile(idle, 50) * 1000:.0f} ms "
            f"p99 {metrics.percentile(idle, 99) * 1000:.0f} ms; PSS {pss_idle}")
        # Warm-up: a few blocking attaches and a detach, so no run pays first-use costs.
        warm = min(4, len(servers))
        for i in range(warm):
            status, body = client.api("POST", f"/servers/{servers[i]}/os-volume_attachments",
                                      version="2.100",
                                      body={"volumeAttachment": {"volumeId": volumes[i]}})
            check(status, body, (200,), "warm-up attach")
        wait_volumes(client, volumes[:warm], "in-use", timeout=300)
        detach_all(client, servers[:warm], volumes[:warm], timeout=300)
        runs = []
        for version in versions:
            log(f"storm at {version}: {len(servers)} attaches in flight")
            result = storm(client, stack, servers, volumes, probe_server, version, args)
            runs.append(result)
            print(report.run_line(result), flush=True)
            stack.check_alive()
            log("detaching everything")
            detach_all(client, servers, volumes, timeout=600)
        # As monitoring would see it once the storms are over, not in the same
        # second: workers over [api] worker_private_memory_max are replaced
        # when idle, checked every few seconds.
        time.sleep(PSS_SETTLE)
        pss_after = metrics.pss_mb(stack.our_groups())
        summary = {
            "argv": argv, "date": datetime.datetime.now().astimezone().isoformat(
                timespec="seconds"),
            "idle": idle, "cal": cal, "pss_idle": pss_idle, "pss_after": pss_after,
            "runs": runs, "workers": args.workers, "n": args.servers, "delay": args.delay,
            "loadavg": os.getloadavg(), "api_preload": args.api_preload,
            "api_threads": args.api_threads, "commit": stack.commit,
            "status_poll": args.status_poll, "pss_settle": PSS_SETTLE,
            "cpu_priority": args.cpu_priority, "api_options": _api_options(args),
        }
        text = report.markdown(summary) + scraped_lines(runs)
        print(text, flush=True)
        if not args.no_results:
            log(f"results written to {report.write(args.results, summary, text)}")
            if args.plots:
                from benchmarks import plots

                for path in plots.attach_storm_pictures(args.results, summary, report.NOVA):
                    log(f"picture {path}")
        return 0 if all(not r["errors"] and r["in_use_after"] for r in runs) else 1
    finally:
        # No second Ctrl-C half way through the cleanup.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        log("cleaning up")
        stack.stop()


def main(argv=None):
    return run_script(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
