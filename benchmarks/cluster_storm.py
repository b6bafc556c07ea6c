"""The attach storm over the cluster deployment's computes, through its load balancer (issue 22).

Where ``attach_storm`` runs one compute on loopback, this starts the
cluster deployment (``volumesvc_aio.cluster``: computes in network
namespaces, two API nodes behind HAProxy, two conductors, a 3-node RabbitMQ
cluster with quorum queues, PostgreSQL) and, for each ``--servers`` N:

1. boots N servers (and one more for the probe) from the starter image; the
   scheduler spreads them over the computes (not measured);
2. creates N 1 GiB volumes (not measured);
3. sends the N attaches at ``--microversion`` (2.101) at once, one thread
   each, through the load balancer, with ``attach_storm.storm``: the
   answer's latency, the time until Cinder shows every volume ``in-use``,
   a GET probe 5 times a second, CPU per process group;
4. names every straggler (an attach answered 202 whose volume is not
   ``in-use`` when the storm ends) with what the API, Cinder and the logs
   say about it;
5. deletes the servers and volumes before the next N.

Cinder's share of the time is given two ways: its processes' CPU (and its
database server's, which Glance shares but does not use in a storm) among
all of the deployment's, and the seconds cinder-api spent answering requests
(its own log's ``time:``; the benchmark's volume lists left out) against
the sum over attaches of the time from the POST to ``in-use``.

``--compute-driver fake`` (the default) runs the computes on the fake
driver: a thousand QEMU guests do not fit this machine. Run as root from
the repository root, with no other cluster deployment up (fixed ports)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.cluster_storm --servers 100,1000
"""

import argparse
import concurrent.futures
import contextlib
import datetime
import os
import re
import subprocess
import time
import uuid

from benchmarks import attach_storm
from benchmarks.lib import report as results
from benchmarks.lib import storm_metrics as metrics
from benchmarks.lib.storm_client import Client, boot_servers, check, list_servers, log, run_script
from volumesvc_aio import cluster as cluster_mod

_TIMED = re.compile(r'"(GET|POST|PUT|DELETE) (\S+) HTTP/1\.[01]" status: (\d+)\s+len: \d+ '
                    r'time: ([0-9.]+)')
# The benchmark's own Cinder requests (its volume-list polls), not volumesvc's.
OWN_REQUESTS = ("GET /v3/volumes/detail",)


class PagedClient(Client):
    """The storm client, with volume lists of any length (Cinder pages at 1000).

    A list that times out is asked again: in the first N=1000 run one list
    waited over 60 s behind the storm's own Cinder requests in cinder-api's
    single worker, and the storm ended on that timeout instead of measuring.
    """

    LIST_TIMEOUT = 180

    def volume_statuses(self, attempts=5, interval=1.0):
        found, marker = {}, None
        while True:
            path = "/volumes/detail?limit=1000" + (f"&marker={marker}" if marker else "")
            for attempt in range(attempts):
                try:
                    status, body = self.cinder("GET", path, timeout=self.LIST_TIMEOUT)
                except OSError as exc:  # a timeout or a reset connection
                    if attempt == attempts - 1:
                        raise
                    log(f"Cinder volume list: {exc!r}; asking again")
                    continue
                if status == 200 or status < 500 or attempt == attempts - 1:
                    break
                time.sleep(interval)
            check(status, body, (200,), "Cinder volume list")
            page = body["volumes"]
            found.update({v["id"]: v["status"] for v in page})
            if len(page) < 1000:
                return found
            marker = page[-1]["id"]


class ClusterStack:
    """What ``attach_storm.storm`` reads of a stack, for the cluster deployment."""

    metrics_urls: dict = {}

    def __init__(self, cluster):
        self.cluster = cluster
        self.conf_path = cluster.conf_path
        self.cinder = cluster.cinder

    def our_groups(self):
        """volumesvc's processes and the deployment's own RabbitMQ nodes and databases."""
        return {name: proc.pid for name, proc in self.cluster.procs.items() if proc.running()}

    def cinder_groups(self):
        return {proc.name: proc.pid for proc in self.cluster.cinder.processes}

    @property
    def cinder_api_log(self):
        return os.path.join(self.cluster.cinder.log_dir, "cinder-api.log")


def cinder_request_seconds(path, offset):
    """{"METHOD /route": [count, seconds]} of cinder-api's requests logged after ``offset``."""
    found = {}
    with contextlib.suppress(OSError), open(path, errors="replace") as f:
        f.seek(offset)
        for line in f:
            m = _TIMED.search(line)
            if not m:
                continue
            route = metrics._UUID.sub("{id}", m.group(2).split("?")[0])
            entry = found.setdefault(f"{m.group(1)} {route}", [0, 0.0])
            entry[0] += 1
            entry[1] += float(m.group(4))
    return found


def cinder_share(run, cinder_names, timed):
    """Cinder's share of the storm: of the deployment's CPU, and of the attaches' time."""
    cpu = run["cpu"]
    ours = {k: v for k, v in cpu.items()
            if k not in ("machine", "shared daemons", "load generator")}
    cinder_cpu = sum(v for k, v in ours.items() if k in cinder_names)
    volumesvc_seconds = sum(s for route, (_, s) in timed.items() if route not in OWN_REQUESTS)
    # Each attach's time from its POST to in-use, summed: the in-use times less
    # the sends (the mean send for each, should some never be in use).
    starts = [start for start, _ in run["spans"]]
    mean_start = sum(starts) / len(starts) if starts else 0.0
    waited = sum(run["done_at"]) - mean_start * len(run["done_at"])
    return {"cpu": cinder_cpu, "cpu_total": sum(ours.values()),
            "request_seconds": volumesvc_seconds, "attach_seconds": waited}


def stragglers(client, cluster, servers, volumes):
    """Every volume of the storm not in-use at its end: what each side says about it.

    An attach the API refused has no entry in the server's attachment list;
    one it accepted (a straggler) has, with its status and fault at 2.106.
    """
    statuses = client.volume_statuses()
    found = []
    for server, volume in zip(servers, volumes, strict=True):
        if statuses.get(volume) == "in-use":
            continue
        status, body = client.api("GET", f"/servers/{server}/os-volume_attachments",
                                  version=attach_storm.STATUS_VERSION)
        entry = next((a for a in (body or {}).get("volumeAttachments", [])
                      if a["volumeId"] == volume), None) if status == 200 else None
        found.append({"server": server, "volume": volume, "cinder": statuses.get(volume),
                      "api": entry, "logs": _log_lines(cluster, volume)})
    return found


def _log_lines(cluster, volume, limit=6):
    """What volumesvc's logs say about ``volume`` (any level: a rollback is INFO)."""
    names = [n for n in cluster.procs if n.startswith(("conductor-", "compute-", "api-"))]
    out = subprocess.run(["grep", "-h", "-F", volume, *[cluster.log_path(n) for n in names]],
                         capture_output=True, text=True, check=False).stdout.splitlines()
    return [line[:300] for line in out[:limit]]


def spread(client, servers):
    hosts = {}
    wanted = set(servers)
    for server in list_servers(client):
        if server["id"] in wanted:
            host = server.get("OS-EXT-SRV-ATTR:host")
            hosts[host] = hosts.get(host, 0) + 1
    return dict(sorted(hosts.items(), key=lambda kv: str(kv[0])))


def clean(client, timeout):
    """Delete every server and volume, so the next N starts from an empty deployment."""
    servers = [s["id"] for s in list_servers(client, detail=False)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda s: client.api("DELETE", f"/servers/{s}"), servers))
    deadline = time.monotonic() + timeout
    while list_servers(client, detail=False):
        if time.monotonic() > deadline:
            raise TimeoutError("servers not deleted")
        time.sleep(2)
    volumes = list(client.volume_statuses())
    attach_storm.wait_volumes(client, volumes, ("available", "error"), timeout)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda v: client.cinder("DELETE", f"/volumes/{v}"), volumes))
    while client.volume_statuses():
        if time.monotonic() > deadline:
            raise TimeoutError("volumes not deleted")
        time.sleep(2)


def run_level(client, cluster, stack, image_id, n, args):
    log(f"N={n}: booting {n + 1} servers over {len(cluster.hosts)} computes")
    t0 = time.monotonic()
    ids = boot_servers(client, image_id, n + 1, timeout=args.setup_timeout)
    servers, probe_server = ids[:n], ids[n]
    boot_s = time.monotonic() - t0
    hosts = spread(client, servers)
    log(f"N={n}: booted in {boot_s:.0f}s, per host {hosts}; creating {n} volumes")
    t0 = time.monotonic()
    volumes = attach_storm.create_volumes(client, n, timeout=args.setup_timeout)
    volumes_s = time.monotonic() - t0
    log(f"N={n}: volumes in {volumes_s:.0f}s; the storm at {args.microversion}")
    offset = metrics.log_size(stack.cinder_api_log)
    storm_args = argparse.Namespace(client_timeout=args.client_timeout, status_poll=False,
                                    poll_interval=1.0, storm_timeout=args.storm_timeout,
                                    stall_timeout=args.stall_timeout, delay=0.0)
    run = attach_storm.storm(client, stack, servers, volumes, probe_server, args.microversion,
                             storm_args)
    timed = cinder_request_seconds(stack.cinder_api_log, offset)
    run.update(hosts=hosts, boot_s=boot_s, volumes_s=volumes_s, timed=timed,
               share=cinder_share(run, set(stack.cinder_groups()) | {"postgresql-services"},
                                  timed),
               stragglers=stragglers(client, cluster, servers, volumes))
    log(f"N={n}: {_summary(run)}")
    return run


def _summary(run):
    lat = run["latencies"]
    return (f"202 p50/p99 {results.num(metrics.percentile(lat, 50), 2)} / "
            f"{results.num(metrics.percentile(lat, 99), 2)} s, all in-use "
            f"{results.num(run['in_use_after'])} s, errors {len(run['errors'])}, "
            f"not in-use {run['not_in_use']}, stragglers {len(run['stragglers'])}")


def markdown(runs, args, cluster, commit, started):
    timeout = args.reservation_timeout or 60
    lines = [f"Working tree at `{commit}`, {started} UTC; {len(cluster.hosts)} computes on the "
             f"**{args.compute_driver}** driver, each in its own namespace; 2 API nodes "
             f"(`[api] workers = 2`) behind HAProxy, 2 conductors, 3 RabbitMQ nodes "
             f"(quorum queues), volumesvc's database on {args.database}; Cinder 29 "
             f"(file driver, 1 API worker). Every request through the load balancer. "
             f"Cinder's CPU share counts cinder-api, -scheduler, -volume and their "
             f"database server. `[compute] attachment_reservation_timeout = {timeout}`.",
             "",
             "```",
             "PYTHONPATH=$PWD .venv/bin/python -m benchmarks.cluster_storm "
             + " ".join(args.argv),
             "```", "",
             "| N | servers per compute | attach 202 p50 / p99 | all in-use | last in-use "
             "| errors | not in-use | GET during storm p50 / p99 | Cinder CPU share | Cinder "
             "request time / attach time |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        share = r["share"]
        cpu_share = share["cpu"] / share["cpu_total"] if share["cpu_total"] else None
        time_share = (share["request_seconds"] / share["attach_seconds"]
                      if share["attach_seconds"] > 0 else None)
        lat = r["latencies"]
        lines.append(
            f"| {r['n']} | {' / '.join(str(v) for v in r['hosts'].values())} | "
            f"{results.num(metrics.percentile(lat, 50), 2)} / "
            f"{results.num(metrics.percentile(lat, 99), 2)} s | "
            f"{results.num(r['in_use_after'])} s | "
            f"{results.num(max(r['done_at'], default=None))} s | "
            f"{len(r['errors'])} | {r['not_in_use']} | "
            f"{results.lat(r['probe'])} | "
            f"{results.num(cpu_share * 100 if cpu_share is not None else None)} % "
            f"({results.num(share['cpu'])} of {results.num(share['cpu_total'])} CPU-s) | "
            f"{results.num(time_share * 100 if time_share is not None else None)} % "
            f"({results.num(share['request_seconds'])} of "
            f"{results.num(share['attach_seconds'])} s) |")
    for r in runs:
        lines += ["", f"N={r['n']}: boots {r['boot_s']:.0f} s and volume creates "
                      f"{r['volumes_s']:.0f} s before the storm (not measured); last 202 "
                      f"after {results.num(r['last_answer'])} s; final Cinder statuses "
                      f"{r['final_statuses']}.", "",
                  "Cinder requests during the storm (count, seconds in cinder-api):", ""]
        for route, (count, secs) in sorted(r["timed"].items(), key=lambda kv: -kv[1][1]):
            lines.append(f"- `{route}`: {count}, {secs:.1f} s")
        cpu = {k: v for k, v in r["cpu"].items() if k not in ("machine",)}
        top = sorted(cpu.items(), key=lambda kv: -kv[1])[:10]
        lines += ["", "CPU-s during the storm, busiest groups: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in top)
                  + f"; machine busy {r['cpu'].get('machine', 0):.1f} CPU-s over "
                    f"{r['window']:.0f} s."]
        if r["errors"]:
            lines += ["", "Errors (first 5): "
                      + "; ".join(f"`{e[:160]}`" for e in r["errors"][:5])]
        if r["stragglers"]:
            lines += ["", f"Stragglers ({len(r['stragglers'])}, first 5):"]
            for s in r["stragglers"][:5]:
                lines.append(f"- volume {s['volume']} (Cinder `{s['cinder']}`), API entry "
                             f"`{s['api']}`; logs: {s['logs'] or 'nothing'}")
        else:
            lines += ["", "Stragglers: none (every attach answered 202 ended in-use)."]
    return "\n".join(lines)


def _set_reservation_timeout(seconds):
    """Have the cluster write ``seconds`` as ``[compute] attachment_reservation_timeout``.

    The cluster rolls a reservation back after 60 s so its fault tests end
    sooner; a storm whose attaches wait longer than that for Cinder has the
    computes roll back attaches a conductor is still doing (the first N=1000
    run's straggler), which the product's 600 s would not.
    """
    write = cluster_mod.write_cluster_config

    def write_with_timeout(path, **kwargs):
        return write(path, overrides={"compute": {"attachment_reservation_timeout": seconds}},
                     **kwargs)

    cluster_mod.write_cluster_config = write_with_timeout


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--servers", default="100,1000",
                   help="comma-separated N: servers, volumes and attaches per storm")
    p.add_argument("--computes", type=int, default=5)
    p.add_argument("--compute-driver", choices=cluster_mod.COMPUTE_DRIVERS, default="fake")
    p.add_argument("--database", choices=cluster_mod.DATABASES, default="postgresql")
    p.add_argument("--microversion", default="2.101")
    p.add_argument("--reservation-timeout", type=int, default=None, metavar="S",
                   help="[compute] attachment_reservation_timeout of the deployment "
                        "(default: the cluster's 60 s, short for its fault tests; the "
                        "product's default is 600 s)")
    p.add_argument("--state-dir", default=None,
                   help="default: a new directory under /var/tmp, deleted afterwards")
    p.add_argument("--client-timeout", type=float, default=600.0)
    p.add_argument("--storm-timeout", type=float, default=900.0)
    p.add_argument("--stall-timeout", type=float, default=150.0)
    p.add_argument("--setup-timeout", type=float, default=1800.0)
    results.add_arguments(p)
    args = p.parse_args(argv)
    args.argv = argv
    args.sizes = [int(v) for v in args.servers.split(",")]
    return args


def run(args, argv):
    state_dir = args.state_dir or f"/var/tmp/vs-cluster-bench-{uuid.uuid4().hex[:8]}"
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    # The cluster runs the working tree, not a snapshot: say when it differs.
    if subprocess.run(["git", "status", "--porcelain", "volumesvc"], capture_output=True,
                      text=True, check=False).stdout.strip():
        commit += " + uncommitted changes in volumesvc/"
    # noauth2: the storm client (benchmarks/lib/storm_client.py) sends user:project tokens.
    cluster = cluster_mod.Cluster(state_dir, computes=args.computes, prefix="vscb",
                                  subnet="10.251.3.0/24", database=args.database,
                                  compute_driver=args.compute_driver, auth="noauth2", log=log)
    runs = []
    if args.reservation_timeout is not None:
        _set_reservation_timeout(args.reservation_timeout)
    try:
        cluster.start()
        client = PagedClient(f"{cluster.lb_url}/v2.1", cluster.cinder.url,
                             args.client_timeout, ssl_context=cluster.ssl_context())
        status, body = client._do("GET", f"{cluster.glance.url}/v2/images?name="
                                  "volumesvc-tiny-raw", None, {}, 30)
        check(status, body, (200,), "image list")
        image_id = body["images"][0]["id"]
        stack = ClusterStack(cluster)
        for k, n in enumerate(args.sizes):
            runs.append(run_level(client, cluster, stack, image_id, n, args))
            if k < len(args.sizes) - 1:
                clean(client, args.setup_timeout)
    finally:
        if runs:
            text = markdown(runs, args, cluster, commit, started)
            print(text, flush=True)
            if not args.no_results:
                mark = f"<!-- cluster_storm {','.join(str(r['n']) for r in runs)} {started} -->"
                path = results.write_result(
                    args.results, date=started, topic="cluster-storm",
                    title="Attach storm over the cluster deployment", mark=mark,
                    end="<!-- /cluster_storm -->", text=text)
                log(f"results: {path}")
        cluster.stop()
        if not args.state_dir:
            subprocess.run(["rm", "-rf", state_dir], check=False)
    return 0


def main(argv=None):
    return run_script(parse_args, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
