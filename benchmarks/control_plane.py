"""Control plane at 10, 50, 100 compute hosts: conductor, RabbitMQ and API as hosts grow.

For each host count H a fresh deployment (``storm_stack``: PostgreSQL,
RabbitMQ vhosts, a real Cinder and Glance, volumesvc-api under gunicorn, one
conductor) gets H compute services on the fake driver, several per process
(``control_plane_computes``), each with its own host name, RPC server and
heartbeat, with the production ``report_interval`` of 10 s. Then:

1. idle: the conductor's, the computes' and RabbitMQ's CPU and memory over
   ``--idle-seconds`` with nothing but heartbeats and periodic tasks, and
   the number of queues in the vhost;
2. ``--servers`` servers are booted (the scheduler spreads them over the
   hosts, fewest instances first) and as many volumes created (not measured);
3. the attach storm of ``benchmarks.attach_storm`` at ``--microversion``:
   every attach in flight at once, a ``GET /servers/{id}`` probe 5 times a
   second, with RabbitMQ's queue depths sampled (``rabbitmqctl list_queues``)
   and CPU per process group measured over the storm.

Run from the repository root (about 5 minutes per host count at 100 servers)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.control_plane --hosts 10,50,100 \\
        --servers 100

It prints one table row per host count and writes the block to
``benchmarks/results/<date>-control-plane.md`` (``--no-results`` to skip).
"""

import argparse
import contextlib
import datetime
import os
import sys
import threading
import time

from benchmarks import attach_storm
from benchmarks.lib import report as results
from benchmarks.lib import storm_metrics as metrics
from benchmarks.lib.allinone import rabbit
from benchmarks.lib.storm_client import Client, boot_servers, idle_gets, log, run_script
from benchmarks.lib.storm_stack import HOST, START_TIMEOUT, Stack, wait_until

#: Production heartbeats (``[DEFAULT] report_interval``), not the storm stack's 2 s.
REPORT_INTERVAL = 10


class ControlPlaneStack(Stack):
    """The storm stack with ``hosts`` compute services, ``per_process`` to a process."""

    def __init__(self, *, hosts, per_process, **kwargs):
        super().__init__(**kwargs)
        # The first host keeps the storm stack's name: its start waits for it.
        self.hosts = [HOST] + [f"cp-{i:03d}" for i in range(1, hosts)]
        self.per_process = per_process
        self.compute_groups = []
        self.config_overrides = {"DEFAULT": {"report_interval": REPORT_INTERVAL,
                                             "service_down_time": 60}}

    @property
    def vhost(self):
        return f"volumesvc-storm-{self.tag}"

    def _spawn(self, name, argv, env=None):
        if name != "volumesvc-compute":
            return super()._spawn(name, argv, env)
        for k in range(0, len(self.hosts), self.per_process):
            chunk = self.hosts[k:k + self.per_process]
            self.compute_groups.append(super()._spawn(
                f"volumesvc-compute-{len(self.compute_groups)}",
                [sys.executable, "-m", "benchmarks.control_plane_computes",
                 "--config-file", self.conf_path, "--hosts", ",".join(chunk)], env))
        return self.compute_groups[0]

    def start(self, ref="HEAD"):
        super().start(ref)
        up = wait_until(lambda: len(servicegroup_up_hosts(self.conf_path)) >= len(self.hosts),
                        START_TIMEOUT, interval=2.0)
        if not up:
            raise RuntimeError(f"only {len(servicegroup_up_hosts(self.conf_path))} of "
                               f"{len(self.hosts)} computes came up")
        return self

    def our_groups(self):
        groups = {"api": self.services["api"].pid, "conductor": self.services["conductor"].pid}
        groups.update({p.name: p.pid for p in self.compute_groups})
        return groups

    def check_alive(self):
        super().check_alive()
        for proc in self.compute_groups:
            if not proc.running():
                raise RuntimeError(f"{proc.name} exited:\n{proc.tail()}")


class PatientClient(Client):
    """The storm client whose Cinder volume list survives a timed-out answer (bounded).

    On a machine this loaded one list can wait more than a minute in
    cinder-api's queue; that says nothing about the control plane measured.
    """

    def volume_statuses(self, attempts=5, interval=1.0):
        for _ in range(2):
            with contextlib.suppress(OSError):
                return super().volume_statuses(attempts, interval)
            time.sleep(interval)
        return super().volume_statuses(attempts, interval)


# --- RabbitMQ ---------------------------------------------------------------------------------

def rabbit_pid():
    """The pid of the RabbitMQ node on 127.0.0.1:5672 (its Erlang VM)."""
    out = rabbit._ctl("eval", "list_to_integer(os:getpid()).", timeout=60).stdout
    return int(out.strip())


def rabbit_usage(pid):
    """(CPU seconds, RSS MiB) of the RabbitMQ VM."""
    cpu = metrics._stat(pid)[2]
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return cpu, rss / 1024.0


def list_queues(vhost):
    """{queue: (messages, consumers)} of ``vhost``."""
    return parse_queues(rabbit._ctl("list_queues", "-p", vhost, "name", "messages",
                                    "consumers", "--no-table-headers", "--quiet",
                                    timeout=60).stdout)


def parse_queues(out):
    """``rabbitmqctl list_queues name messages consumers`` output as a dict."""
    queues = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            queues[parts[0]] = (int(parts[1]), int(parts[2]))
    return queues


class QueueSampler:
    """``list_queues`` in a loop: the deepest the vhost's queues got, in total and one."""

    def __init__(self, vhost):
        self.vhost = vhost
        self.max_total, self.max_one, self.max_one_name, self.samples = 0, 0, None, 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop_event.is_set() and self.samples < 100000:
            try:
                queues = list_queues(self.vhost)
            except Exception:  # noqa: BLE001 - a slow rabbitmqctl: try again
                continue
            self.samples += 1
            total = sum(m for m, _ in queues.values())
            self.max_total = max(self.max_total, total)
            for name, (messages, _) in queues.items():
                if messages > self.max_one:
                    self.max_one, self.max_one_name = messages, name
            self.stop_event.wait(0.5)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stop_event.set()
        self.thread.join(90)
        return self


# --- one host count ---------------------------------------------------------------------------

def _computes(values):
    return sum(v for k, v in values.items() if k.startswith("volumesvc-compute"))


def measure_idle(stack, seconds):
    """CPU per second of the conductor, the computes and RabbitMQ with nothing to do."""
    pid = rabbit_pid()
    groups = stack.our_groups()
    cpu0, (r0, _) = metrics.snapshot(groups), rabbit_usage(pid)
    t0 = time.monotonic()
    time.sleep(seconds)
    cpu1, (r1, rss) = metrics.snapshot(groups), rabbit_usage(pid)
    window = time.monotonic() - t0
    cpu = metrics.delta(cpu0, cpu1)
    pss = metrics.pss_mb(groups)
    queues = list_queues(stack.vhost)
    return {"window": window, "conductor": cpu["conductor"] / window,
            "computes": _computes(cpu) / window, "rabbit": (r1 - r0) / window,
            "rabbit_rss": rss, "conductor_pss": pss["conductor"],
            "computes_pss": _computes(pss), "queues": len(queues),
            "consumers": sum(c for _, c in queues.values())}


def storm_args(args):
    """The options ``attach_storm.storm`` reads, as its own command line gives them."""
    return argparse.Namespace(
        client_timeout=args.client_timeout, status_poll=False, poll_interval=1.0,
        storm_timeout=args.storm_timeout, stall_timeout=120.0, delay=args.delay)


def run_level(args, hosts):
    stack = ControlPlaneStack(hosts=hosts, per_process=args.per_process, delay=args.delay,
                              api_workers=args.workers, api_threads=8, log=log)
    try:
        t0 = time.monotonic()
        stack.start(args.ref)
        log(f"{hosts} computes up in {time.monotonic() - t0:.0f}s; idle {args.idle_seconds}s")
        idle = measure_idle(stack, args.idle_seconds)
        client = PatientClient(stack.api_url, stack.cinder.url, args.client_timeout)
        t_boot = time.monotonic()
        servers = boot_servers(client, stack.image_id, args.servers + 1,
                               timeout=max(900, 3 * args.servers))
        boot_seconds = time.monotonic() - t_boot
        probe_server, servers = servers[0], servers[1:]
        volumes = attach_storm.create_volumes(client, args.servers, timeout=900)
        used = len(instance_hosts(stack.conf_path))
        log(f"{len(servers)} servers on {used} hosts in {boot_seconds:.0f}s; "
            f"{len(volumes)} volumes")
        stack.check_alive()
        idle_get = idle_gets(client, probe_server, count=50)
        pid = rabbit_pid()
        r0 = rabbit_usage(pid)[0]
        sampler = QueueSampler(stack.vhost).start()
        run = attach_storm.storm(client, stack, servers, volumes, probe_server,
                                 args.microversion, storm_args(args))
        sampler.stop()
        r1, rss = rabbit_usage(pid)
        pss = metrics.pss_mb(stack.our_groups())
        stack.check_alive()
        window = run["window"]
        return {"hosts": hosts, "hosts_used": used, "idle": idle, "n": len(servers),
                "boot_seconds": boot_seconds, "idle_get": idle_get, "run": run,
                "conductor_cpu": run["cpu"]["conductor"] / window,
                "computes_cpu": _computes(run["cpu"]) / window,
                "api_cpu": run["cpu"]["api"] / window, "rabbit_cpu": (r1 - r0) / window,
                "rabbit_rss": rss, "conductor_pss": pss["conductor"], "api_pss": pss["api"],
                "max_queue_total": sampler.max_total, "max_queue_one": sampler.max_one,
                "max_queue_name": sampler.max_one_name, "queue_samples": sampler.samples,
                "commit": stack.commit}
    finally:
        log("cleaning up")
        stack.stop()


def _database(conf_path):
    from volumesvc import conf as vs_conf
    from volumesvc.db import api as db_api

    conf = vs_conf.get_conf(args=["--config-file", conf_path], default_config_files=[])
    return conf, db_api.Database(conf)


def servicegroup_up_hosts(conf_path):
    """Hosts whose compute service is up."""
    from volumesvc import binaries, context, servicegroup
    from volumesvc.objects import service as service_obj

    conf, db = _database(conf_path)
    try:
        services = service_obj.list_services(db, context.get_admin_context(),
                                             binary=binaries.COMPUTE)
        return {s.host for s in services if servicegroup.is_up(conf, s)}
    finally:
        db.dispose()


def instance_hosts(conf_path):
    """{host: servers} of the servers placed so far."""
    import sqlalchemy as sa

    from volumesvc import context
    from volumesvc.db import models

    _, db = _database(conf_path)
    try:
        with db.reader(context.get_admin_context()) as session:
            rows = session.execute(sa.select(models.Instance.host, sa.func.count())
                                   .where(models.Instance.deleted == 0)
                                   .group_by(models.Instance.host)).all()
        return {host: count for host, count in rows if host}
    finally:
        db.dispose()


# --- report -----------------------------------------------------------------------------------

HEADER = ("| computes | idle: conductor CPU | idle: RabbitMQ CPU / RSS | queues (consumers) "
          "| attaches | attach p50 / p99 | GET during storm p50 / p99 | all in-use after "
          "| conductor CPU in storm | RabbitMQ CPU in storm | deepest queue (total) "
          "| conductor PSS | errors |")


def row(r):
    i, run = r["idle"], r["run"]
    pct = lambda v: f"{v * 100:.1f} %"  # noqa: E731 - CPU seconds per second, as %
    return (f"| {r['hosts']} ({r['hosts_used']} with servers) | {pct(i['conductor'])} "
            f"| {pct(i['rabbit'])} / {i['rabbit_rss']:.0f} MiB "
            f"| {i['queues']} ({i['consumers']}) | {r['n']} | {results.lat(run['latencies'])} "
            f"| {results.lat(run['probe'])} | {results.num(run['in_use_after'])} s "
            f"| {pct(r['conductor_cpu'])} | {pct(r['rabbit_cpu'])} "
            f"| {r['max_queue_one']} ({r['max_queue_total']}) "
            f"| {r['conductor_pss']:.0f} MB | {len(run['errors'])} |")


def markdown(summary):
    lines = [f"### {', '.join(str(r['hosts']) for r in summary['levels'])} computes, "
             f"{summary['servers']} attaches at {summary['microversion']}, "
             f"{summary['workers']} API workers — {summary['date']}", "",
             f"`python -m benchmarks.control_plane {' '.join(summary['argv'])}` at "
             f"{summary['commit']}; computes {summary['per_process']} per process, "
             f"report_interval {REPORT_INTERVAL} s, reserve delay {summary['delay']:g} s; "
             f"load average at the end {', '.join(f'{x:.1f}' for x in summary['loadavg'])}.",
             "", HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
    lines += [row(r) for r in summary["levels"]]
    lines += ["", "Idle computes' CPU: " + ", ".join(
        f"{r['hosts']}: {r['idle']['computes'] * 100:.0f} %" for r in summary["levels"])
        + ". Idle GET p50 / p99: " + ", ".join(
        f"{r['hosts']}: {results.lat(r['idle_get'])}" for r in summary["levels"])
        + ". Boot of the servers: " + ", ".join(
        f"{r['hosts']}: {r['boot_seconds']:.0f} s" for r in summary["levels"])
        + ". Deepest single queue: " + ", ".join(
        f"{r['hosts']}: {r['max_queue_name']}" for r in summary["levels"]) + "."]
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", default="10,50,100", help="compute counts, one deployment each")
    p.add_argument("--servers", type=int, default=100, help="servers = concurrent attaches")
    p.add_argument("--per-process", type=int, default=25, help="compute services per process")
    p.add_argument("--workers", type=int, default=4, help="API gunicorn workers")
    p.add_argument("--microversion", default="2.101")
    p.add_argument("--delay", type=float, default=0.5,
                   help="seconds the fake driver takes per device-name reservation")
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--client-timeout", type=float, default=300.0)
    p.add_argument("--storm-timeout", type=float, default=900.0)
    p.add_argument("--ref", default="HEAD", help="commit to measure")
    results.add_arguments(p)
    args = p.parse_args(argv)
    args.host_counts = [int(h) for h in args.hosts.split(",") if h.strip()]
    if not args.host_counts or min(args.host_counts) < 1 or not 1 <= args.servers <= 1000:
        p.error("--hosts needs positive counts, --servers 1..1000")
    return args


def run(args, argv):
    levels = []
    for hosts in args.host_counts:
        log(f"--- {hosts} computes")
        levels.append(run_level(args, hosts))
        print(row(levels[-1]), flush=True)
    summary = {"argv": argv, "levels": levels, "servers": args.servers,
               "microversion": args.microversion, "workers": args.workers,
               "per_process": args.per_process, "delay": args.delay,
               "commit": levels[0]["commit"][:12], "loadavg": os.getloadavg(),
               "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    text = markdown(summary)
    print(text, flush=True)
    if not args.no_results:
        path = results.write_result(
            args.results, date=summary["date"][:10], topic="control-plane",
            title="Control plane as compute hosts grow",
            mark=f"<!-- control-plane {args.hosts} n={args.servers} -->",
            end=f"<!-- /control-plane {args.hosts} n={args.servers} -->", text=text)
        log(f"results written to {path}")
    return 0 if all(not r["run"]["errors"] and r["run"]["in_use_after"] for r in levels) else 1


def main(argv=None):
    return run_script(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
