"""CPU, memory and latency bookkeeping for the attach storm (Linux /proc only)."""

import contextlib
import os
import re

CLK_TCK = os.sysconf("SC_CLK_TCK")
SHARED_DAEMONS = ("postgres", "mariadbd", "beam.smp")


def _stat(pid):
    """(pgrp, comm, utime+stime, cutime+cstime) in seconds, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    comm = data[data.index("(") + 1:data.rindex(")")]
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): pgrp=5, utime=14, stime=15, cutime=16, cstime=17
    pgrp = int(fields[2])
    own = (int(fields[11]) + int(fields[12])) / CLK_TCK
    children = (int(fields[13]) + int(fields[14])) / CLK_TCK
    return pgrp, comm, own, children


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def snapshot(groups):
    """CPU seconds per group name, plus shared daemons and the whole machine.

    ``groups`` maps a name to a process-group id (the leader's pid). A
    group's CPU is every live member's utime+stime plus the leader's
    cutime+cstime, so a gunicorn worker that exited and was reaped is still
    counted. Shared daemons (PostgreSQL, MariaDB, RabbitMQ) are summed by
    name machine-wide: other users of those servers are included.
    """
    by_pgid = {pgid: name for name, pgid in groups.items()}
    cpu = dict.fromkeys(groups, 0.0)
    cpu["shared daemons"] = 0.0
    for pid in _pids():
        st = _stat(pid)
        if st is None:
            continue
        pgrp, comm, own, children = st
        name = by_pgid.get(pgrp)
        if name is not None:
            cpu[name] += own + (children if pid == pgrp else 0.0)
        elif comm in SHARED_DAEMONS:
            cpu["shared daemons"] += own
    cpu["machine"] = machine_busy()
    return cpu


def machine_busy():
    """Busy CPU seconds of the whole machine (all cores) since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    steal = fields[7] if len(fields) > 7 else 0
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def delta(before, after):
    return {k: after[k] - before.get(k, 0.0) for k in after}


def pss_mb(groups):
    """PSS in MB per group name (every live process of its process group), and "total"."""
    by_pgid = {pgid: name for name, pgid in groups.items()}
    kb = dict.fromkeys(groups, 0)
    for pid in _pids():
        st = _stat(pid)
        if st is None or st[0] not in by_pgid:
            continue
        with contextlib.suppress(OSError), open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    kb[by_pgid[st[0]]] += int(line.split()[1])
                    break
    mb = {name: value / 1024.0 for name, value in kb.items()}
    mb["total"] = sum(mb.values())
    return mb


def percentile(values, p):
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


_REQUEST = re.compile(r'"(GET|POST|PUT|DELETE|PATCH|HEAD) (\S+) HTTP/1\.[01]" status: (\d+)')
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")


def log_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def cinder_requests(path, offset):
    """Cinder API requests logged after byte ``offset``: {"METHOD /path/{id}": count}."""
    counts = {}
    with contextlib.suppress(OSError), open(path, errors="replace") as f:
        f.seek(offset)
        for line in f:
            m = _REQUEST.search(line)
            if not m:
                continue
            path_only = _UUID.sub("{id}", m.group(2).split("?")[0])
            key = f"{m.group(1)} {path_only}"
            counts[key] = counts.get(key, 0) + 1
    return counts


class ConnectionSampler:
    """Peak database connections of our PostgreSQL and Cinder's MariaDB database.

    A storm of several hundred attaches is where an operator first meets
    PostgreSQL's ``max_connections`` (100 by default) and MariaDB's (151):
    the peak is reported next to the storm so the pool settings can be
    checked against it. A short connection per server and sample, one
    sample every ``interval`` seconds, from a thread.
    """

    QUERIES = {
        "postgresql": "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()",
        "mysql": "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE()",
    }

    def __init__(self, urls, interval=0.5):
        import threading

        import sqlalchemy as sa

        self.interval = interval
        self.peak = dict.fromkeys(urls, 0)
        self.engines = {name: sa.create_engine(url, poolclass=sa.pool.NullPool)
                        for name, url in urls.items()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        import sqlalchemy as sa

        for name, engine in self.engines.items():
            query = self.QUERIES.get(engine.dialect.name)
            if query is None:
                continue
            with contextlib.suppress(Exception), engine.connect() as conn:
                # the sampler's own connection is not the storm's
                count = conn.execute(sa.text(query)).scalar_one() - 1
                self.peak[name] = max(self.peak[name], count)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(30)
        for engine in self.engines.values():
            engine.dispose()
        return dict(self.peak)


class CpuSampler:
    """CPU seconds per process group every ``interval`` seconds during a storm (a thread).

    ``samples``: [(seconds since start, :func:`snapshot`)], for the storm's
    CPU-per-process picture (benchmarks/plots.py).
    """

    def __init__(self, groups, interval=0.5):
        import threading
        import time

        self._clock = time.monotonic
        self.groups, self.interval, self.samples = groups, interval, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = None

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((self._clock() - self._t0, snapshot(self.groups)))
            self._stop.wait(self.interval)

    def start(self, t0):
        self._t0 = t0
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(30)
        return self.samples
