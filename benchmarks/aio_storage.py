"""RBD next to file on the all-in-one: the storms, a 1 GiB clone against a copy, memory and start.

Why a script of its own: the storm stack (``storm_stack``) runs the fake
compute driver over Cinder's file driver, so an attach there never opens a
disk. An RBD attach is only what it is in production when QEMU opens the
network disk through librbd, which needs a Ceph cluster, a libvirt daemon
and real QEMU computes: what ``volumesvc-aio`` starts by default (one-node
Ceph, Cinder backends ``rbd`` and ``file`` with volume types of the same
names, Glance on RBD). This script starts one all-in-one and runs the same
workloads on both volume types in it, so the two are measured on the same
machine, the same minutes and the same services:

- ``attach``: ``attach_storm``'s storm (N attaches in flight at once, a
  probe GET 5 times a second), at each ``--microversions``, for volumes of
  each type, to servers running in real QEMU. Where the time goes is read
  from the compute's own metrics (its ``attach_volume`` operation) and from
  cinder-api's log (each Cinder request's time).
- ``boot``: ``boot_storm``'s storm at 2.67 from the starter image and from
  blank volumes, per type, to ACTIVE, then all deleted.
- ``clone``: a 1 GiB raw image of incompressible bytes uploaded to Glance;
  a volume made from it (time to ``available``) and a server booted from it
  (time to ACTIVE), per type: on ``rbd`` an RBD clone of Glance's image, on
  ``file`` a full copy.
- ``memory``: the all-in-one's start time (launch to its ready line) and the
  RSS and PSS of its processes once idle; run once with ``--storage ceph``
  and once with ``--storage file``.

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.aio_storage --phases memory,clone,boot,attach
    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.aio_storage --storage file --phases memory

Each phase writes its block to ``benchmarks/results/<date>-rbd-<phase>.md``
as soon as it ends (``--no-results`` to skip).
"""

import argparse
import concurrent.futures
import datetime
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
import urllib.parse
import urllib.request

from benchmarks import attach_storm, boot_storm
from benchmarks.lib import report as results
from benchmarks.lib import storm_metrics as metrics
from benchmarks.lib.allinone import free_port
from benchmarks.lib.storm_client import Client, boot_servers, check, log, run_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GiB = 1 << 30
# Leaders of the all-in-one's process groups, named by what their command line holds.
GROUP_NAMES = ("volumesvc-api", "volumesvc-conductor", "volumesvc-compute", "cinder-api",
               "cinder-scheduler", "cinder-volume", "glance", "keystone", "ceph-mon",
               "ceph-mgr", "ceph-osd", "libvirtd", "virtlogd", "barbican")
SHORT = {"volumesvc-api": "api", "volumesvc-conductor": "conductor",
         "volumesvc-compute": "compute", "glance": "glance-api"}
CINDER_TIME = re.compile(r'"(GET|POST|PUT|DELETE) (\S+) HTTP/1\.[01]" status: (\d+)\s+'
                         r'len: \d+\s+time: ([\d.]+)')


# --- the all-in-one as a subprocess -------------------------------------------------------

class Aio:
    """``volumesvc-aio`` (noauth2) in its own session; its processes found through /proc."""

    def __init__(self, storage, api_workers, keep_state=False, volume_api_workers=1):
        self.keep_state = keep_state
        self.volume_api_workers = volume_api_workers
        self.storage = storage
        self.state_dir = tempfile.mkdtemp(prefix=f"vs-bench-{storage}-", dir="/var/tmp")
        self.ports = {name: free_port() for name in ("api", "volume", "image")}
        self.api_url = f"http://127.0.0.1:{self.ports['api']}/v2.1"
        self.volume_url = f"http://127.0.0.1:{self.ports['volume']}/v3"
        self.image_url = f"http://127.0.0.1:{self.ports['image']}"
        self.api_workers = api_workers
        self.proc = None
        self.lines = []
        self.start_seconds = None
        self.metrics_urls = {}
        self.ceph_conf = self.ceph_keyring = None
        self.image_id = None
        self.daemon = None  # the libvirt daemon held by the benchmark, if any

    def start(self, timeout=1200):
        exe = os.path.join(os.path.dirname(sys.executable), "volumesvc-aio")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [exe, "--state-dir", self.state_dir, "--api-port", str(self.ports["api"]),
             "--volume-port", str(self.ports["volume"]),
             "--image-port", str(self.ports["image"]), "--storage", self.storage,
             "--api-workers", str(self.api_workers), "--host", f"bench-{self.storage}",
             "--volume-api-workers", str(self.volume_api_workers),
             "--key-manager-port", str(free_port()), "--auth", "noauth2"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        deadline = t0 + timeout
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("volumesvc-aio: ready "):
                self.start_seconds = time.monotonic() - t0
                break
            if time.monotonic() > deadline:
                raise RuntimeError("volumesvc-aio not ready:\n" + "".join(self.lines[-30:]))
        else:
            raise RuntimeError("volumesvc-aio exited:\n" + "".join(self.lines[-30:]))
        # The lines after "ready": metrics URLs, Ceph's conf and keyring, the starter image.
        while True:
            line = self.proc.stdout.readline()
            self.lines.append(line)
            self.metrics_urls.update(re.findall(r"(\S+)-metrics=(http\S+)", line))
            found = re.search(r"ceph conf=(\S+) keyring=(\S+)", line)
            if found:
                self.ceph_conf, self.ceph_keyring = found.groups()
            found = re.search(r"starter image: (\S+)", line)
            if found:
                self.image_id = found.group(1)
            if not line or line.startswith("  Stop with"):
                break
        # Keep reading its output so it never blocks on a full pipe.
        concurrent.futures.ThreadPoolExecutor(1).submit(self._drain)
        return self

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(300)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        if not self.keep_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def groups(self):
        """{name: process group id} of the all-in-one's children (each leads its own group)."""
        found = {}
        for pid, (ppid, cmdline) in _processes().items():
            if ppid != self.proc.pid:
                continue
            name = next((n for n in GROUP_NAMES if n in cmdline), None)
            if name is None:
                name = os.path.basename(cmdline.split(" ")[0]) or str(pid)
            found[SHORT.get(name, name)] = pid
        return found

    def members(self):
        """Every live pid below the all-in-one, with the name of its top-level group."""
        procs = _processes()
        top = {pid: name for name, pid in self.groups().items()}
        named = {self.proc.pid: "volumesvc-aio"}

        def name_of(pid, depth=0):
            if pid in named:
                return named[pid]
            if pid in top:
                return top[pid]
            parent = procs.get(pid, (None, ""))[0]
            if parent is None or depth > 20:
                return None
            return name_of(parent, depth + 1)

        return {pid: n for pid in procs if (n := name_of(pid)) is not None}


def _processes():
    """{pid: (ppid, command line)} of every live process."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        found[int(entry)] = (ppid, cmdline)
    return found


def _memory_kb(pid):
    """(RSS, PSS) in kB from smaps_rollup, or None when the process is gone."""
    values = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key = line.split(":")[0]
                if key in ("Rss", "Pss"):
                    values[key] = int(line.split()[1])
    except OSError:
        return None
    return values.get("Rss", 0), values.get("Pss", 0)


def memory(pids_by_name):
    """{name: (RSS MB, PSS MB, processes)} and "total", from ``{pid: name}``."""
    sums = {}
    for pid, name in pids_by_name.items():
        mem = _memory_kb(pid)
        if mem is None:
            continue
        rss, pss, count = sums.get(name, (0, 0, 0))
        sums[name] = (rss + mem[0], pss + mem[1], count + 1)
    out = {name: (rss / 1024, pss / 1024, count) for name, (rss, pss, count) in sums.items()}
    out["total"] = tuple(sum(v[i] for v in out.values()) for i in range(3))
    return out


def qemu_cpu(servers):
    """CPU seconds of the QEMU processes of ``servers`` (their -uuid names the server)."""
    total, wanted = 0.0, set(servers)
    for pid, (_, cmdline) in _processes().items():
        if "qemu-system" not in cmdline:
            continue
        found = re.search(r"-uuid (\S+)", cmdline)
        if found and found.group(1) in wanted:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / metrics.CLK_TCK
    return total


class AioStack:
    """What ``attach_storm.storm`` and ``boot_storm.boot_storm`` read from their stack."""

    metrics_urls: dict = {}  # their --metrics scrape: not used here

    def __init__(self, aio):
        self.aio = aio
        self.conf_path = os.path.join(aio.state_dir, "volumesvc.conf")
        # SQLite (ours) and no MariaDB sampling: the sampler skips what it cannot count.
        self.cinder = types.SimpleNamespace(database_connection="sqlite://")
        self.cinder_api_log = os.path.join(aio.state_dir, "cinder", "log", "cinder-api.log")

    def _pick(self, names):
        return {k: v for k, v in self.aio.groups().items() if k in names}

    def our_groups(self):
        return self._pick(("api", "conductor", "compute"))

    def cinder_groups(self):
        # Ceph's daemons and the libvirt daemon too, when this all-in-one started them.
        return self._pick(("cinder-api", "cinder-scheduler", "cinder-volume", "ceph-mon",
                           "ceph-mgr", "ceph-osd", "libvirtd"))


# --- what the services say about where the time went ---------------------------------------

COMPUTE_FAMILIES = {"volumesvc_compute_operation_duration_seconds": "operation",
                    "volumesvc_compute_cinder_call_duration_seconds": "Cinder",
                    "volumesvc_compute_libvirt_call_duration_seconds": "driver"}


def compute_timings(aio):
    """{"operation attach_volume": (count, seconds), "Cinder attachment_update": ...} so far.

    The compute's own histograms: each operation, each call to Cinder and
    each call into the virt driver (``volumesvc/compute/metrics.py``),
    successful ones only.
    """
    from prometheus_client import parser

    url = next((u for k, u in aio.metrics_urls.items() if "compute" in k), None)
    if url is None:
        return {}
    with urllib.request.urlopen(url, timeout=30) as resp:
        text = resp.read().decode()
    out = {}
    for family in parser.text_string_to_metric_families(text):
        kind = COMPUTE_FAMILIES.get(family.name)
        if kind is None:
            continue
        for s in family.samples:
            if s.labels.get("result") != "success":
                continue
            key = f"{kind} {s.labels.get('operation') or s.labels.get('call')}"
            count, total = out.get(key, (0.0, 0.0))
            if s.name.endswith("_count"):
                out[key] = (count + s.value, total)
            elif s.name.endswith("_sum"):
                out[key] = (count, total + s.value)
    return out


def timings_delta(before, after):
    """{key: (count, mean seconds)} of what happened between two ``compute_timings``."""
    out = {}
    for key, (count, total) in after.items():
        c0, t0 = before.get(key, (0.0, 0.0))
        if count > c0:
            out[key] = (count - c0, (total - t0) / (count - c0))
    return out


def cinder_times(path, offset):
    """{"METHOD /path": [seconds, ...]} of cinder-api's requests logged after ``offset``."""
    out = {}
    try:
        with open(path, errors="replace") as f:
            f.seek(offset)
            for line in f:
                m = CINDER_TIME.search(line)
                if m:
                    key = f"{m.group(1)} " + metrics._UUID.sub(
                        "{id}", urllib.parse.urlsplit(m.group(2)).path)
                    out.setdefault(key, []).append(float(m.group(4)))
    except OSError:
        pass
    return out


def _ms(values):
    if not values:
        return "—"
    return (f"{sum(values) / len(values) * 1000:.0f} ms mean, p50 "
            f"{metrics.percentile(values, 50) * 1000:.0f} / p99 "
            f"{metrics.percentile(values, 99) * 1000:.0f} ms")


def _wait(predicate, timeout, what, interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout}s")
        time.sleep(interval)


def _volume(client, volume_id):
    status, body = client.cinder("GET", f"/volumes/{volume_id}")
    check(status, body, (200,), "volume show")
    volume = body["volume"]
    if volume["status"].startswith("error"):
        raise RuntimeError(f"volume {volume_id} went to {volume['status']}")
    return volume


def _server_status(client, server_id):
    status, body = client.api("GET", f"/servers/{server_id}")
    check(status, body, (200,), "server show")
    server = body["server"]
    if server["status"] == "ERROR":
        raise RuntimeError(f"server {server_id} ERROR: {server.get('fault')}")
    return server["status"]


def _rbd_parent(aio, volume_id):
    """The ``parent:`` line of ``rbd info volumes/volume-<id>``, or None."""
    out = subprocess.run(["rbd", "-c", aio.ceph_conf, "--keyring", aio.ceph_keyring, "info",
                          f"volumes/volume-{volume_id}"], capture_output=True, text=True,
                         timeout=60).stdout
    found = re.search(r"parent: (\S+)", out)
    return found.group(1) if found else None


# --- phases ---------------------------------------------------------------------------------

def phase_memory(aio, args):
    time.sleep(args.settle)
    mem = memory(aio.members())
    shared = {}
    for pid, (_, cmdline) in _processes().items():
        for name in ("beam.smp", "mariadbd", "libvirtd"):
            if cmdline.split(" ")[0].endswith(name) and name not in \
                    {n for n in aio.groups()}:
                shared.setdefault(name, []).append(pid)
    daemon = getattr(aio, "daemon", None)
    if daemon is not None:
        # Started by this script for the run (hold_libvirt_daemon): the all-in-one's own
        # start would have started the same two daemons.
        held = {p.pid: "libvirtd + virtlogd" for p in daemon.processes}
        mem = memory({**aio.members(), **held})
    rows = "\n".join(f"| {name} | {rss:.0f} | {pss:.0f} | {count} |"
                     for name, (rss, pss, count) in sorted(mem.items(), key=lambda kv: -kv[1][1])
                     if name != "total")
    total = mem["total"]
    text = (f"### `--storage {aio.storage}`\n\n"
            f"Start (launch to the ready line, packages and virtualenvs already installed): "
            f"**{aio.start_seconds:.0f} s**. Memory {args.settle:.0f} s after ready, every "
            f"process below `volumesvc-aio` (no server running): **RSS {total[0]:.0f} MB, "
            f"PSS {total[1]:.0f} MB** in {total[2]} processes.\n\n"
            "| process group | RSS MB | PSS MB | processes |\n|---|---|---|---|\n"
            f"{rows}\n\nNot counted (shared with other users of the machine, the same with "
            "either storage): RabbitMQ and MariaDB"
            + (", and the libvirt daemon, already running when this all-in-one started"
               if "libvirtd" not in aio.groups() and aio.storage == "ceph" and daemon is None
               else "") + ".\n")
    return {"start": aio.start_seconds, "rss": total[0], "pss": total[1]}, text


def phase_clone(client, aio, args):
    t0 = time.monotonic()
    image_id = _random_image(aio, args.image_gib)
    upload = time.monotonic() - t0
    rows = []
    for rep in range(args.clone_repeat):
        for vtype in args.types:
            t0 = time.monotonic()
            status, body = client.cinder("POST", "/volumes", body={"volume": {
                "size": args.image_gib, "imageRef": image_id, "volume_type": vtype,
                "name": f"clone-{vtype}-{rep}"}})
            check(status, body, (202,), "volume from image")
            volume_id = body["volume"]["id"]
            _wait(lambda v=volume_id: _volume(client, v)["status"] == "available", 1200,
                  "volume available")
            available = time.monotonic() - t0
            parent = _rbd_parent(aio, volume_id) if vtype == "rbd" else None
            client.cinder("DELETE", f"/volumes/{volume_id}")
            t0 = time.monotonic()
            status, body = client.api("POST", "/servers", version="2.67", body=boot_storm.
                                      boot_body(f"clone-{vtype}-{rep}", args.image_gib,
                                                vtype, image_id))
            check(status, body, (202,), "boot from image")
            server_id = body["server"]["id"]
            _wait(lambda s=server_id: _server_status(client, s) == "ACTIVE", 1200,
                  "server ACTIVE")
            active = time.monotonic() - t0
            client.api("DELETE", f"/servers/{server_id}")
            _wait(lambda s=server_id: client.api("GET", f"/servers/{s}")[0] == 404, 600,
                  "server gone")
            log(f"{vtype} #{rep + 1}: volume available {available:.1f}s, server ACTIVE "
                f"{active:.1f}s, RBD parent {parent}")
            rows.append((vtype, rep + 1, available, active, parent))
    lines = "\n".join(f"| `{t}` | {r} | {a:.1f} s | {b:.1f} s | "
                      f"{'`' + p + '`' if p else ('none' if t == 'rbd' else 'n/a (file)')} |"
                      for t, r, a, b, p in rows)
    best = {t: (min(a for tt, _, a, _, _ in rows if tt == t),
                min(b for tt, _, _, b, _ in rows if tt == t)) for t in args.types}
    ratio = ""
    if "rbd" in best and "file" in best:
        ratio = (f"\nBest of each: volume available {best['file'][0] / best['rbd'][0]:.1f}× "
                 f"faster on `rbd`, server ACTIVE {best['file'][1] / best['rbd'][1]:.1f}× "
                 "faster.\n")
    text = (f"A {args.image_gib} GiB raw image of random bytes (`dd if=/dev/urandom`), "
            f"uploaded to Glance (on RBD) in {upload:.0f} s. Per type, one after the other: "
            f"a {args.image_gib} GiB volume from it (POST to `available`), then a server booted "
            f"from it at 2.67 (`source_type: image`, `destination_type: volume`, that "
            "`volume_type`; POST to ACTIVE), deleted before the next.\n\n"
            "| type | run | volume available | server ACTIVE | RBD parent (`rbd info`) |\n"
            f"|---|---|---|---|---|\n{lines}\n{ratio}")
    return rows, text


def _random_image(aio, gib):
    """Upload a raw image of ``gib`` GiB of random bytes (nothing to compress or skip)."""
    work = tempfile.mkdtemp(prefix="vs-bench-image-", dir="/var/tmp")
    try:
        path = os.path.join(work, "image.raw")
        subprocess.run(["dd", "if=/dev/urandom", f"of={path}", "bs=4M",
                        f"count={gib * 256}", "status=none"], check=True)
        t0 = time.monotonic()
        image_id = _upload(aio, path, f"bench-{gib}gib")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"{gib} GiB image {image_id} uploaded in {time.monotonic() - t0:.0f}s")
    return image_id


def _upload(aio, path, name):
    def request(method, url, body=None, headers=None):
        req = urllib.request.Request(aio.image_url + url, data=body, method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
        with urllib.request.urlopen(req, timeout=600) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else None

    image = request("POST", "/v2/images", json.dumps({
        "name": name, "disk_format": "raw", "container_format": "bare",
        "visibility": "public", "min_disk": 1}).encode())
    parts = urllib.parse.urlsplit(aio.image_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=1200)
    with open(path, "rb") as f:
        conn.request("PUT", f"/v2/images/{image['id']}/file", body=f, headers={
            "Content-Type": "application/octet-stream",
            "Content-Length": str(os.path.getsize(path))})
        resp = conn.getresponse()
        resp.read()
    conn.close()
    if resp.status not in (200, 204):
        raise RuntimeError(f"image upload: HTTP {resp.status}")
    _wait(lambda: request("GET", f"/v2/images/{image['id']}")["status"] == "active", 600,
          "image active", interval=1.0)
    return image["id"]


def phase_boot(client, aio, stack, args):
    storm_args = types.SimpleNamespace(client_timeout=600.0, storm_timeout=900.0,
                                       poll_interval=0.5)
    probe = boot_servers(client, aio.image_id, 1, timeout=600)[0]
    source_image, image_words = aio.image_id, "the all-in-one's starter image (1 MiB raw)"
    if args.boot_image_gib:
        source_image = _random_image(aio, args.boot_image_gib)
        image_words = (f"a {args.boot_image_gib} GiB raw image of random bytes in Glance "
                       "(on RBD)")
    # Warm-up: one boot of each kind, deleted, so no storm pays first use.
    for vtype in args.types:
        warm = boot_storm.boot_storm(client, stack, 1, probe, storm_args,
                                     body=_body(vtype, aio.image_id))
        boot_storm.delete_all(client, stack, warm["prefix"], 600)
    rows = []
    for n in args.boot_servers:
        for source in args.boot_sources:
            for vtype in args.types:
                image = source_image if source == "image" else None
                log(f"boot storm: N={n} from {source}, type {vtype}")
                r = boot_storm.boot_storm(client, stack, n, probe, storm_args,
                                          body=_body(vtype, image))
                r["delete"] = boot_storm.delete_all(client, stack, r["prefix"], 900)
                log(f"N={n} {source} {vtype}: all ACTIVE {r['all_active_after']}, errors "
                    f"{len(r['errors'])}, unfinished {r['unfinished']}, volumes {r['volumes']}")
                rows.append((n, source, vtype, r))
    # The attach phase counts every server it sees as its own (storm_client.boot_servers).
    client.api("DELETE", f"/servers/{probe}")
    _wait(lambda: client.api("GET", f"/servers/{probe}")[0] == 404, 600, "probe server gone")
    table = []
    for n, source, vtype, r in rows:
        table.append(
            f"| {n} | {source} | `{vtype}` | {results.num(r['all_active_after'])} s | "
            f"{results.lat(r['to_active'])} | {len(r['errors'])} / {r['unfinished']} | "
            f"{results.lat(r['post'])} | {results.lat(r['probe'])} | "
            f"{results.num(r['delete']['all_gone'])} s | "
            + ", ".join(f"{k} {v}" for k, v in r["volumes"].items()) + " |")
    ratios = []
    for n in args.boot_servers:
        for source in args.boot_sources:
            got = {t: r["all_active_after"] for nn, s, t, r in rows if nn == n and s == source}
            if got.get("rbd") and got.get("file"):
                ratios.append(f"N={n} from {source}: `file` / `rbd` all ACTIVE = "
                              f"{got['file'] / got['rbd']:.2f}")
    text = ("N `POST /servers` at 2.67 released at once, each booting from a new 1 GiB volume "
            "of that type (`delete_on_termination`, `networks: none`, flavor m1.nano) made "
            f"from {image_words} or blank, on real QEMU; a probe "
            "GETs another server 5 times a second. Time to ACTIVE from each POST; then all "
            "deleted at once until servers and volumes are gone.\n\n"
            "| N | source | type | all ACTIVE | to ACTIVE p50 / p99 | ERROR / unfinished | "
            "POST p50 / p99 | GET during storm p50 / p99 | delete, all gone | "
            "volumes by type |\n|---|---|---|---|---|---|---|---|---|---|\n"
            + "\n".join(table) + "\n\n" + "\n".join(f"- {x}" for x in ratios) + "\n")
    return rows, text


def _body(vtype, image):
    return lambda name: boot_storm.boot_body(name, 1, vtype, image)


def phase_attach(client, aio, stack, args):
    n, per = args.attach_servers, args.volumes_per_server
    guests_n = -(-n // per)
    log(f"booting {guests_n + 1} servers on real QEMU")
    booted = boot_servers(client, aio.image_id, guests_n + 1, timeout=max(900, 10 * guests_n),
                          wave=args.boot_wave)
    probe, guests = booted[0], booted[1:]
    # Volume i goes to server i // per: N attaches on fewer guests than N when
    # N guests would not fit the machine's memory.
    servers = [guests[i // per] for i in range(n)]
    storm_args = types.SimpleNamespace(
        client_timeout=600.0, status_poll=False, poll_interval=1.0, storm_timeout=900.0,
        stall_timeout=150.0, delay=0.0)
    # Every type's volumes first, then the storms microversion by microversion, each type
    # in turn: a run cut short still has both types at the first microversion.
    volumes = {}
    for vtype in args.types:
        volumes[vtype] = attach_storm.create_volumes(client, n, timeout=900,
                                                     volume_type=vtype)
        log(f"{n} volumes of type {vtype} available")
        # Warm-up: a few blocking attaches and detaches, as attach_storm does.
        warm = min(4, n)
        for i in range(warm):
            status, body = client.api("POST", f"/servers/{servers[i]}/os-volume_attachments",
                                      version="2.100",
                                      body={"volumeAttachment": {"volumeId": volumes[vtype][i]}})
            check(status, body, (200,), "warm-up attach")
        attach_storm.wait_volumes(client, volumes[vtype][:warm], "in-use", timeout=300)
        attach_storm.detach_all(client, servers[:warm], volumes[vtype][:warm], timeout=300)
    rows = []
    for version in args.microversions:
        for vtype in args.types:
            log(f"attach storm: N={n} at {version}, type {vtype}")
            offset = metrics.log_size(stack.cinder_api_log)
            q0, c0 = qemu_cpu(guests), compute_timings(aio)
            r = attach_storm.storm(client, stack, servers, volumes[vtype], probe, version,
                                   storm_args)
            r["qemu_cpu"] = qemu_cpu(guests) - q0
            r["compute"] = timings_delta(c0, compute_timings(aio))
            r["compute_attach"] = r["compute"].get("operation attach_volume", (0, None))[::-1]
            r["cinder_times"] = cinder_times(stack.cinder_api_log, offset)
            log(f"{vtype} {version}: attach {results.lat(r['latencies'])}, all in-use "
                f"{results.num(r['in_use_after'])} s, errors {len(r['errors'])}, compute: "
                + ", ".join(f"{k} {c:g} × {m:.2f} s" for k, (c, m) in r["compute"].items())
                + "; cinder-api: " + "; ".join(
                    f"{k} ×{len(v)} {_ms(v)}" for k, v in sorted(r["cinder_times"].items())
                    if "attachments" in k))
            rows.append((vtype, version, r))
            attach_storm.detach_all(client, servers, volumes[vtype], timeout=900)
    return rows, _attach_text(rows, n, per)


def _attach_text(rows, n, per=1):
    table, detail = [], []
    for vtype, version, r in rows:
        cpu = r["cpu"]
        table.append(
            f"| {version} | `{vtype}` | {results.lat(r['latencies'])} | "
            f"{results.num(r['rate'])}/s | {results.num(r['in_use_after'])} s | "
            f"{len(r['errors'])} | {results.lat(r['probe'])} | "
            f"{results.num(r['compute_attach'][0], 2)} s ({r['compute_attach'][1]:g}) | "
            f"{sum(cpu.get(k, 0.0) for k in ('api', 'conductor', 'compute')) / n:.3f} / "
            f"{sum(cpu.get(k, 0.0) for k in ('cinder-api', 'cinder-scheduler', 'cinder-volume')) / n:.3f} / "  # noqa: E501
            f"{sum(cpu.get(k, 0.0) for k in ('ceph-mon', 'ceph-mgr', 'ceph-osd')) / n:.3f} / "
            f"{r['qemu_cpu'] / n:.3f} |")
        times = r["cinder_times"]
        detail.append(
            f"- {version} `{vtype}`: the compute's mean per call: " + ", ".join(
                f"{k} {m:.2f} s (×{c:g})" for k, (c, m) in sorted(r["compute"].items()))
            + "; cinder-api's own time: " + ("; ".join(
                f"`{k}` ×{len(v)} {_ms(v)}" for k, v in sorted(times.items())
                if "attachments" in k) or "not in its log")
            + f"; machine busy {cpu.get('machine', 0):.0f} CPU-s in {r['window']:.0f} s")
    ratios = []
    for version in dict.fromkeys(v for _, v, _ in rows):
        got = {t: r for t, v, r in rows if v == version}
        if "rbd" in got and "file" in got and got["file"]["in_use_after"] and \
                got["rbd"]["in_use_after"]:
            p50 = {t: metrics.percentile(got[t]["latencies"], 50) for t in ("rbd", "file")}
            ratios.append(
                f"- {version}: all in-use `rbd` / `file` = "
                f"{got['rbd']['in_use_after'] / got['file']['in_use_after']:.2f}; attach p50 "
                f"{p50['rbd'] / p50['file']:.2f}; the compute's attach_volume (mean) "
                f"{(got['rbd']['compute_attach'][0] or 0) / (got['file']['compute_attach'][0] or 1):.2f}")  # noqa: E501
    guests = (f"N={n} servers" if per == 1 else
              f"{-(-n // per)} servers for N={n} attaches ({per} volumes each)")
    pairing = "volume *i* to server *i*" if per == 1 else f"volume *i* to server *i* // {per}"
    return (f"`attach_storm`'s storm on the all-in-one: {guests} booted from the starter "
            "image onto a local root, running in real QEMU (TCG) through the libvirt daemon; "
            f"{n} 1 GiB volumes of the type, {pairing}, all requests in flight "
            "at once; a probe GET 5 times a second; Cinder's volume list polled once a second "
            "until all are in-use. Then everything detached before the next storm. No "
            "slow-reserve delay (the real libvirt driver).\n\n"
            "| microversion | type | attach p50 / p99 | attaches/s | all in-use | errors | "
            "GET during storm p50 / p99 | compute attach_volume mean (count) | "
            "CPU-s per attach: ours / Cinder / Ceph / QEMU |\n"
            "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(table)
            + "\n\nRatios (goal: `rbd` within 10% of `file`):\n\n" + "\n".join(ratios)
            + "\n\nWhere the time went, per storm: the compute's own histograms (each "
              "operation, each call to Cinder, each call into the libvirt driver; mean "
              "seconds), cinder-api's own time per attachment request (its log), and all "
              "CPU time on the machine (other users included). CPU-s per attach above "
              "includes each group's idle CPU over the storm's window.\n\n"
            + "\n".join(detail) + "\n")


# --- main -----------------------------------------------------------------------------------

TOPICS = {"memory": ("rbd-memory", "All-in-one memory and start, Ceph and file"),
          "clone": ("rbd-clone", "Boot from a 1 GiB image: RBD clone against a file copy"),
          "boot": ("rbd-boot-storm", "Boot storm, rbd next to file"),
          "attach": ("rbd-attach-storm", "Attach storm, rbd next to file")}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--storage", choices=("ceph", "file"), default="ceph",
                   help="the all-in-one's --storage (the clone, boot and attach phases "
                        "need ceph: they compare its rbd and file types)")
    p.add_argument("--phases", default="memory,clone,boot,attach",
                   help="comma-separated, run in this order: " + ", ".join(TOPICS))
    p.add_argument("--types", default="rbd,file", help="volume types compared")
    p.add_argument("--api-workers", type=int, default=2,
                   help="the all-in-one's --api-workers (default: its own default)")
    p.add_argument("--volume-api-workers", type=int, default=1,
                   help="the all-in-one's --volume-api-workers (cinder-api processes)")
    p.add_argument("--boot-image-gib", type=int, default=0,
                   help="the boot storm's 'image' source: an image of random bytes of this "
                        "size uploaded first (0: the all-in-one's 1 MiB starter image)")
    p.add_argument("--attach-servers", type=int, default=100, help="N of the attach storm")
    p.add_argument("--volumes-per-server", type=int, default=1,
                   help="the attach storm's volumes per server: N attaches go to N / this "
                        "many servers (300 guests do not fit 24 GB)")
    p.add_argument("--microversions", default="2.101,2.100")
    p.add_argument("--boot-wave", type=int, default=100,
                   help="the attach phase boots its servers this many at a time (a wave of "
                        "100 real QEMU builds starved the compute's heartbeats on a loaded "
                        "2-core machine: the scheduler saw it down)")
    p.add_argument("--boot-servers", default="20", help="comma-separated N of the boot storm")
    p.add_argument("--boot-sources", default="image,blank",
                   help="the boot storm's root volumes: from the image, blank, or both")
    p.add_argument("--image-gib", type=int, default=1, help="size of the clone phase's image")
    p.add_argument("--clone-repeat", type=int, default=2)
    p.add_argument("--settle", type=float, default=30.0,
                   help="seconds between ready and the memory reading")
    p.add_argument("--daemon-wait", type=float, default=900.0, metavar="SECONDS",
                   help="with Ceph, wait at most this long for a libvirt daemon another "
                        "deployment started to go, so this run starts (and keeps) its own")
    p.add_argument("--keep-state", action="store_true",
                   help="keep the all-in-one's state dir (logs; Ceph's OSD file)")
    results.add_arguments(p)
    args = p.parse_args(argv)
    args.phases = [x for x in args.phases.split(",") if x]
    args.types = [x for x in args.types.split(",") if x]
    args.microversions = [x for x in args.microversions.split(",") if x]
    args.boot_servers = [int(x) for x in args.boot_servers.split(",") if x]
    args.boot_sources = [x for x in args.boot_sources.split(",") if x]
    if set(args.boot_sources) - {"image", "blank"}:
        p.error("--boot-sources: image, blank or both")
    if args.volumes_per_server < 1:
        p.error("--volumes-per-server: at least 1")
    unknown = set(args.phases) - set(TOPICS)
    if unknown:
        p.error(f"--phases: unknown {sorted(unknown)}")
    if args.storage == "file" and set(args.phases) - {"memory"}:
        p.error("--storage file runs the memory phase only")
    return args


def hold_libvirt_daemon(storage, wait):
    """Start the libvirt daemon here unless one runs; the harness, or None if it was running.

    With Ceph the all-in-one shares the machine's one libvirt daemon, and the
    deployment that started it stops it when it stops: an all-in-one that
    merely found it running loses its hypervisor half way (this happened to
    a run of this script on a machine shared with test runs). Started from
    the benchmark, the daemon lives as long as the measurement does.
    """
    if storage != "ceph":
        return None
    from volumesvc_aio import libvirtd

    daemon = libvirtd.LibvirtDaemon(tempfile.mkdtemp(prefix="vs-bench-libvirtd-",
                                                     dir="/var/tmp"))
    daemon.die_with_parent = True
    # A fresh machine has no ``libvirt`` group yet, and the daemon's socket names it.
    daemon.install()
    daemon.configure()
    # Another deployment's daemon goes when that deployment does: wait for it to go
    # (bounded), then start one of our own before anyone else does.
    deadline = time.monotonic() + wait
    while libvirtd.socket_answers(libvirtd.LIBVIRTD_SOCKET) and time.monotonic() < deadline:
        time.sleep(1.0)
    daemon.start()
    daemon.wait_ready()
    if not daemon.started_here:
        log("a libvirt daemon was already running: this run depends on its owner")
        return None
    log(f"libvirt daemon started for this run (logs in {daemon.log_dir})")
    return daemon


def run(args, argv):
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    aio = Aio(args.storage, args.api_workers, args.keep_state, args.volume_api_workers)
    daemon = None
    try:
        daemon = hold_libvirt_daemon(args.storage, args.daemon_wait)
        aio.daemon = daemon
        log(f"starting volumesvc-aio --storage {args.storage} in {aio.state_dir}")
        aio.start()
        log(f"ready in {aio.start_seconds:.0f}s")
        client = Client(aio.api_url, aio.volume_url, 600.0)
        # One cinder-api worker answered a volume list in more than 60 s in an RBD storm of
        # 50 (results/2026-12-03-rbd-attach-storm.md): a slow poll, not a failed run.
        client.list_timeout = 300
        stack = AioStack(aio)
        status, body = client.cinder("PUT", "/os-quota-sets/admin", body={
            "quota_set": {"volumes": -1, "gigabytes": -1, "snapshots": -1}})
        check(status, body, (200,), "Cinder quota update")
        for phase in args.phases:
            log(f"phase {phase}")
            t0 = time.monotonic()
            if phase == "memory":
                _, text = phase_memory(aio, args)
            elif phase == "clone":
                _, text = phase_clone(client, aio, args)
            elif phase == "boot":
                _, text = phase_boot(client, aio, stack, args)
            else:
                _, text = phase_attach(client, aio, stack, args)
            _write(args, argv, commit, phase, text, time.monotonic() - t0)
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        log("stopping the all-in-one")
        aio.stop()
        if daemon is not None:
            daemon.stop()


def _write(args, argv, commit, phase, text, seconds):
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    block = (f"Run {date}, commit `{commit}`, {seconds:.0f} s, load average after {load} "
             "(2 cores).\n\n```\nPYTHONPATH=$PWD .venv/bin/python -m benchmarks.aio_storage "
             + " ".join(argv) + "\n```\n\n" + text)
    print(block, flush=True)
    if args.no_results:
        return
    topic, title = TOPICS[phase]
    # One block per shape of run, so a day's N=20 boots and its N=100 ones sit side by side.
    key = {"memory": f"memory {args.storage}",
           "boot": f"boot N={','.join(map(str, args.boot_servers))}"
           + (f" image {args.boot_image_gib} GiB" if args.boot_image_gib else ""),
           "attach": f"attach N={args.attach_servers}"}.get(phase, phase)
    path = results.write_result(args.results, date=date, topic=topic, title=title,
                                mark=f"<!-- aio_storage {key} -->",
                                end="<!-- /aio_storage -->", text=block)
    log(f"results written to {path}")


def main(argv=None):
    return run_script(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
