"""Boot storm: N concurrent boots from new typed blank volumes at 2.67, then delete them all.

The workload of Nova's same-day "boot-from-volume storm with a volume type"
(``doc/source/contributor/performance.rst``): N ``POST /servers`` released
at once by a barrier (one thread each), every server booting from a new
1 GiB blank volume of Cinder volume type ``gold`` (``delete_on_termination``,
``networks: none``), while a probe sends ``GET /servers/{id}`` 5 times a
second to a server that existed before. Then all N are deleted at once and
the run waits until the servers and their volumes are gone. Same stack as
the attach storm (``storm_stack``); the compute's driver has no delay.

Run from the repository root (several storms in one stack, each starting
from nothing left over)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.boot_storm --servers 20,50,100

It prints a table and adds (or replaces) the run's block in
``benchmarks/results/<date>-boot-storm.md`` (``--no-results`` to skip).
Ctrl-C stops and removes everything it started.
"""

import argparse
import datetime
import os
import signal
import sys
import threading
import time
import urllib.parse

from benchmarks.lib import boot_report as report
from benchmarks.lib import report as results
from benchmarks.lib import storm_metrics as metrics
from benchmarks.lib.storm_client import (
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

VERSION = "2.67"
VOLUME_TYPE = "gold"


def ensure_volume_type(client, name=VOLUME_TYPE):
    """Create the volume type through Cinder's API (admin) unless it exists; lift quotas."""
    status, body = client.cinder("PUT", "/os-quota-sets/admin", body={
        "quota_set": {"volumes": -1, "gigabytes": -1, "snapshots": -1}})
    check(status, body, (200,), "Cinder quota update")
    status, body = client.cinder("GET", "/types")
    check(status, body, (200,), "volume type list")
    for vtype in body["volume_types"]:
        if vtype["name"] == name:
            return vtype["id"]
    status, body = client.cinder("POST", "/types", body={"volume_type": {"name": name}})
    check(status, body, (200, 202), "volume type create")
    return body["volume_type"]["id"]


def boot_body(name, size=1, volume_type=VOLUME_TYPE, image=None):
    """One boot from a new volume: blank, or made from ``image`` when one is given.

    ``volume_type`` and ``image`` are for ``benchmarks.aio_storage``, which
    boots the same storm on the all-in-one's ``rbd`` and ``file`` types, from
    an image as well as blank.
    """
    mapping = {"source_type": "blank", "destination_type": "volume", "boot_index": 0,
               "volume_size": size, "volume_type": volume_type,
               "delete_on_termination": True}
    if image is not None:
        mapping.update(source_type="image", uuid=image)
    return {"server": {"name": name, "flavorRef": "42", "networks": "none",
                       "block_device_mapping_v2": [mapping]}}


def list_servers(client, name, status=None, detail=False):
    """Servers whose name contains ``name`` (the API's substring filter)."""
    query = {"name": name, "limit": 1000, **({"status": status} if status else {})}
    path = "/servers/detail" if detail else "/servers"
    code, body = client.api("GET", f"{path}?{urllib.parse.urlencode(query)}", version=VERSION,
                            timeout=60)
    check(code, body, (200,), "server list")
    return body["servers"]


def volumes_by_id(client):
    status, body = client.cinder("GET", "/volumes/detail?limit=1000", timeout=60)
    check(status, body, (200,), "Cinder volume list")
    return {v["id"]: v for v in body["volumes"]}


class _Posts:
    """N POST /servers from N threads released together by one barrier."""

    def __init__(self, client, prefix, n, timeout, body=boot_body):
        self.client, self.prefix, self.n, self.timeout = client, prefix, n, timeout
        self.body = body
        self.results = [None] * n  # (sent, answered, server id or None, error or None)
        self.barrier = threading.Barrier(n + 1, timeout=120)
        self.threads = [threading.Thread(target=self._post, args=(i,), daemon=True)
                        for i in range(n)]

    def _post(self, i):
        self.barrier.wait()
        t0 = time.monotonic()
        server_id, error = None, None
        try:
            status, body = self.client.api("POST", "/servers", version=VERSION,
                                           body=self.body(f"{self.prefix}-{i}"),
                                           timeout=self.timeout)
            if status == 202:
                server_id = body["server"]["id"]
            else:
                error = f"HTTP {status}: {str(body)[:200]}"
        except Exception as exc:  # noqa: BLE001 - recorded as a failure
            error = repr(exc)
        self.results[i] = (t0, time.monotonic(), server_id, error)

    def start(self):
        for t in self.threads:
            t.start()

    def release(self):
        self.barrier.wait()
        return time.monotonic()

    def join(self, deadline):
        for t in self.threads:
            t.join(max(1.0, deadline - time.monotonic()))


def boot_storm(client, stack, n, probe_server, args, body=boot_body):
    """One storm of N boots; returns the figures, leaves the servers in place.

    ``body(name)`` is each POST's body (default: a blank ``gold`` volume).
    """
    prefix = f"boot{n}-{int(time.time())}"
    posts = _Posts(client, prefix, n, args.client_timeout, body)
    posts.start()
    groups = {**stack.our_groups(), **stack.cinder_groups()}
    offset = metrics.log_size(stack.cinder_api_log)
    cpu0, self0 = metrics.snapshot(groups), self_cpu()
    probe = Probe(client, probe_server, args.client_timeout)
    t_start = posts.release()
    probe.start()
    finished_at = {}  # server id -> monotonic time first seen no longer BUILD
    polls = 0
    deadline = t_start + args.storm_timeout
    while time.monotonic() < deadline and polls < 100000:
        polls += 1
        now = time.monotonic()
        # NOTE: only the still-building servers, ids only: the poll is part of the
        # load, and a detail list of every server twice a second costs the API more
        # than the probe does.
        building = {s["id"] for s in list_servers(client, f"{prefix}-", "BUILD")}
        answered = [r for r in posts.results if r is not None]
        for r in answered:
            if r[2] and r[2] not in building and r[2] not in finished_at:
                finished_at[r[2]] = now
        if len(answered) == n and all(r[2] in finished_at for r in answered if r[2]):
            break
        time.sleep(args.poll_interval)
    posts.join(deadline)
    all_final = time.monotonic()
    probe_ok, probe_failed = probe.stop()
    cpu1, self1 = metrics.snapshot(groups), self_cpu()
    cinder_calls = metrics.cinder_requests(stack.cinder_api_log, offset)
    cpu = metrics.delta(cpu0, cpu1)
    cpu["load generator"] = self1 - self0

    done = [r for r in posts.results if r is not None]
    post_lat = [r[1] - r[0] for r in done if r[2]]
    post_errors = [r[3] for r in done if r[3]] + ["no answer"] * (n - len(done))
    final = {s["id"]: s for s in list_servers(client, f"{prefix}-", detail=True)}
    to_active, errors, unfinished = [], [], 0
    for t0, _, server_id, _ in done:
        if not server_id:
            continue
        status = final.get(server_id, {}).get("status")
        if server_id not in finished_at or status not in ("ACTIVE", "ERROR"):
            unfinished += 1
        elif status == "ACTIVE":
            to_active.append(finished_at[server_id] - t0)
        else:
            errors.append(server_id)
    last_active = max((finished_at[i] for i, s in final.items()
                       if i in finished_at and s["status"] == "ACTIVE"), default=None)
    faults = {}
    for server_id in errors:
        status, body = client.api("GET", f"/servers/{server_id}", version=VERSION)
        faults[server_id] = ((body or {}).get("server", {}).get("fault") or {}).get(
            "message") if status == 200 else f"HTTP {status}"
    types = check_volume_types(client, list(final.values()))
    active = len(to_active)
    all_active_after = (last_active - t_start) if last_active and active == n else None
    return {
        "n": n, "prefix": prefix, "post": post_lat, "post_errors": post_errors,
        "to_active": to_active, "errors": errors, "faults": faults, "unfinished": unfinished,
        "all_active_after": all_active_after,
        "rate": n / all_active_after if all_active_after else None,
        "probe": probe_ok, "probe_failed": probe_failed, "window": all_final - t_start,
        "cpu": cpu, "cinder_calls": cinder_calls, "server_list_polls": polls,
        "volumes": types,
    }


def check_volume_types(client, servers):
    """Every server's volumes by type, as Cinder says: {"gold": k, ...} plus "missing"."""
    volumes = volumes_by_id(client)
    counts = {}
    for server in servers:
        attached = server.get("os-extended-volumes:volumes_attached") or []
        if not attached:
            counts["no volume"] = counts.get("no volume", 0) + 1
        for item in attached:
            volume = volumes.get(item["id"])
            key = "missing in Cinder" if volume is None else (volume.get("volume_type")
                                                             or "no type")
            counts[key] = counts.get(key, 0) + 1
    return counts


def delete_all(client, stack, prefix, timeout):
    """DELETE every server of the storm at once; seconds until they and their volumes are gone."""
    servers = list_servers(client, f"{prefix}-", detail=True)
    volume_ids = {item["id"] for s in servers
                  for item in s.get("os-extended-volumes:volumes_attached") or []}
    offset = metrics.log_size(stack.cinder_api_log)
    barrier = threading.Barrier(len(servers) + 1, timeout=120)
    failures = []

    def delete(server_id):
        barrier.wait()
        try:
            status, body = client.api("DELETE", f"/servers/{server_id}", timeout=timeout)
            if status not in (204, 404):
                failures.append(f"HTTP {status}: {str(body)[:200]}")
        except Exception as exc:  # noqa: BLE001 - recorded
            failures.append(repr(exc))

    threads = [threading.Thread(target=delete, args=(s["id"],), daemon=True) for s in servers]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.monotonic()
    deadline = t0 + timeout
    servers_gone = volumes_gone = None
    left_servers, left_volumes = len(servers), len(volume_ids)
    while time.monotonic() < deadline:
        now = time.monotonic()
        if servers_gone is None:
            left_servers = len(list_servers(client, f"{prefix}-"))
            if not left_servers:
                servers_gone = now - t0
        if volumes_gone is None:
            left_volumes = len(volume_ids & set(volumes_by_id(client)))
            if not left_volumes:
                volumes_gone = now - t0
        if servers_gone is not None and volumes_gone is not None:
            break
        time.sleep(0.5)
    for t in threads:
        t.join(5)
    calls = metrics.cinder_requests(stack.cinder_api_log, offset)
    return {"servers": len(servers), "volumes": len(volume_ids), "servers_gone": servers_gone,
            "volumes_gone": volumes_gone,
            "all_gone": max(servers_gone, volumes_gone) if servers_gone is not None
            and volumes_gone is not None else None,
            "left_servers": left_servers, "left_volumes": left_volumes,
            "failures": failures, "cinder_calls": calls}


def calibrate(client, stack, server, idle):
    """Idle CPU rates, idle GET latency, and the cost of one server-list poll."""
    settle_api(client, server)
    groups = {**stack.our_groups(), **stack.cinder_groups()}
    before = metrics.snapshot(groups)
    time.sleep(5.0)
    idle_rate = {k: v / 5.0 for k, v in metrics.delta(before, metrics.snapshot(groups)).items()}
    idle.extend(idle_gets(client, server))
    return {"idle_rate": idle_rate}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--servers", default="20,50,100",
                   help="comma-separated N, one storm each, in this order, in one stack")
    p.add_argument("--workers", type=int, default=4, help="[api] workers")
    p.add_argument("--api-threads", type=int, default=8, help="[api] threads per worker")
    p.add_argument("--client-timeout", type=float, default=600.0)
    p.add_argument("--storm-timeout", type=float, default=600.0,
                   help="max seconds per storm until every server is ACTIVE or ERROR")
    p.add_argument("--delete-timeout", type=float, default=600.0)
    p.add_argument("--poll-interval", type=float, default=0.5,
                   help="seconds between server-list polls during a storm")
    p.add_argument("--ref", default="HEAD", help="git commit of volumesvc to run")
    results.add_arguments(p)
    p.add_argument("--keep-state", action="store_true", help="keep the state dir (logs)")
    p.add_argument("--no-plots", dest="plots", action="store_false",
                   help="write no PNG picture next to the results (benchmarks/plots.py)")
    args = p.parse_args(argv)
    try:
        args.sizes = [int(x) for x in args.servers.split(",") if x.strip()]
    except ValueError:
        p.error("--servers: comma-separated integers")
    if not args.sizes or not all(1 <= n <= 500 for n in args.sizes):
        p.error("--servers: each N must be 1..500")
    return args


def run(args, argv):
    stack = Stack(delay=0.0, api_workers=args.workers, log=log, keep_state=args.keep_state,
                  api_threads=args.api_threads)
    try:
        t0 = time.monotonic()
        log("starting PostgreSQL db, vhosts, Cinder, Glance, volumesvc api/conductor/compute")
        stack.start(args.ref)
        client = Client(stack.api_url, stack.cinder.url, args.client_timeout)
        type_id = ensure_volume_type(client)
        log(f"stack ready in {time.monotonic() - t0:.0f}s; volume type {VOLUME_TYPE} "
            f"{type_id}; booting the probe's server")
        probe_server = boot_servers(client, stack.image_id, 1, timeout=300)[0]
        # Warm-up: one typed boot-from-volume and its delete, so no storm pays first use.
        warm = boot_storm(client, stack, 1, probe_server, args)
        delete_all(client, stack, warm["prefix"], args.delete_timeout)
        stack.check_alive()
        idle = []
        cal = calibrate(client, stack, probe_server, idle)
        log(f"idle GET p50 {metrics.percentile(idle, 50) * 1000:.0f} ms "
            f"p99 {metrics.percentile(idle, 99) * 1000:.0f} ms")
        runs = []
        for n in args.sizes:
            log(f"boot storm: {n} POST /servers at {VERSION}")
            result = boot_storm(client, stack, n, probe_server, args)
            print(report.run_line(result), flush=True)
            log(f"deleting the {n} servers")
            result["delete"] = delete_all(client, stack, result["prefix"], args.delete_timeout)
            print(report.delete_line(result["delete"]), flush=True)
            runs.append(result)
            stack.check_alive()
        summary = {
            "argv": argv, "date": datetime.datetime.now().astimezone().isoformat(
                timespec="seconds"),
            "idle": idle, "cal": cal, "runs": runs, "workers": args.workers,
            "api_threads": args.api_threads, "loadavg": os.getloadavg(),
            "commit": stack.commit,
        }
        text = report.markdown(summary)
        print(text, flush=True)
        if not args.no_results:
            log(f"results written to {report.write(args.results, summary, text)}")
            if args.plots:
                from benchmarks import plots

                for path in plots.boot_storm_pictures(args.results, summary, report.NOVA):
                    log(f"picture {path}")
        return 0 if all(report.clean(r) for r in runs) else 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        log("cleaning up")
        stack.stop()


def main(argv=None):
    return run_script(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
