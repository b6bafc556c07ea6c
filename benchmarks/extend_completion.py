"""Extend of an attached volume on the all-in-one: Cinder's request to in-use at the new size.

Starts ``volumesvc-aio --auth noauth2`` (real Cinder 29 with the test-only
extend-completion extension, real QEMU), boots one server from a blank volume and attaches a
1 GiB data volume. Then, ``--extends`` times (default 20), grows the data
volume by 1 GiB through Cinder's API and measures, from just before that
request, until Cinder shows it ``in-use`` at the new size **and** the volume
file (which only QEMU's block resize grows: Cinder's file driver leaves an
attached volume alone) has the new size. Cinder polled every 20 ms.

For "Cinder's own time" the same number of extends runs on a detached
volume (Cinder alone: ``available`` → ``extending`` → ``available``). The
Cinder requests the compute makes per extend are counted in cinder-api's
log (requests of the compute's user on the volume during the run).

Run from the repository root (about 3 minutes, the first run longer while
Cinder and Glance install)::

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.extend_completion --extends 20
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from benchmarks.lib.allinone import free_port, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GiB = 1 << 30
BENCH_TOKEN = "bench:bench"  # our own requests; the compute's come as admin
CINDER_VERSION = "volume 3.67"


def _request(method, url, body=None, headers=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "X-Auth-Token": BENCH_TOKEN, "Accept": "application/json",
        "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


class Aio:
    """``volumesvc-aio`` as a subprocess in its own process group."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.api_port, self.volume_port, self.image_port = free_port(), free_port(), free_port()
        self.compute = f"http://127.0.0.1:{self.api_port}/v2.1"
        self.cinder = f"http://127.0.0.1:{self.volume_port}/v3"
        self.proc = None

    def start(self, timeout=900):
        exe = os.path.join(os.path.dirname(sys.executable), "volumesvc-aio")
        self.proc = subprocess.Popen(
            [exe, "--state-dir", self.state_dir, "--api-port", str(self.api_port),
             "--volume-port", str(self.volume_port), "--image-port", str(self.image_port),
             "--host", "bench-extend", "--api-workers", "1", "--no-install",
             "--key-manager-port", str(free_port()), "--auth", "noauth2"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if line.startswith("volumesvc-aio: ready "):
                return
            if time.monotonic() > deadline:
                break
        raise RuntimeError("volumesvc-aio did not get ready:\n" + "".join(lines[-30:]))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(180)

    def nova(self, method, path, body=None, version="2.100"):
        return _request(method, self.compute + path, body,
                        {"OpenStack-API-Version": f"compute {version}",
                         "X-Auth-Token": "admin:admin"})

    def volume(self, method, path, body=None):
        return _request(method, self.cinder + path, body,
                        {"OpenStack-API-Version": CINDER_VERSION})

    def volume_file(self, volume_id):
        return os.path.join(self.state_dir, "cinder", "volumes", f"volume-{volume_id}")

    def cinder_api_log(self):
        with open(os.path.join(self.state_dir, "cinder", "log", "cinder-api.log")) as f:
            return f.read()


def _volume(aio, volume_id):
    return aio.volume("GET", f"/volumes/{volume_id}")[1]["volume"]


def _new_volume(aio, name):
    _, body = aio.volume("POST", "/volumes", {"volume": {"size": 1, "name": name}})
    volume_id = body["volume"]["id"]
    wait_for(lambda: _volume(aio, volume_id)["status"] == "available", 120, interval=0.2,
             what="available")
    return volume_id


def _boot(aio):
    status, body = aio.nova("POST", "/servers", {"server": {
        "name": "bench-extend", "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": [{"source_type": "blank", "destination_type": "volume",
                                     "boot_index": 0, "volume_size": 1,
                                     "delete_on_termination": True}]}}, version="2.67")
    assert status == 202, body
    server = body["server"]["id"]
    wait_for(lambda: aio.nova("GET", f"/servers/{server}")[1]["server"]["status"] == "ACTIVE",
             300, interval=0.5, what="ACTIVE")
    return server


def _extend(aio, volume_id, size, settled):
    started = time.monotonic()
    status, body = aio.volume("POST", f"/volumes/{volume_id}/action",
                              {"os-extend": {"new_size": size}})
    assert status == 202, body
    wait_for(lambda: settled(_volume(aio, volume_id), size), 120, interval=0.02,
             what=f"extend to {size}")
    return time.monotonic() - started


def _in_use_and_grown(aio, volume_id):
    def settled(volume, size):
        if volume["status"].startswith("error"):
            raise RuntimeError(f"volume {volume_id} is {volume['status']}")
        return (volume["status"] == "in-use" and volume["size"] == size
                and os.path.getsize(aio.volume_file(volume_id)) == size * GiB)
    return settled


def _available_at(volume, size):
    return volume["status"] == "available" and volume["size"] == size


def _compute_requests(log, volume_id, since_line):
    """cinder-api requests on ``volume_id`` by the compute (user admin) after ``since_line``."""
    pattern = re.compile(r"cinder\.api\.openstack\.wsgi \[[^\]]* admin admin .*\] "
                         r"(GET|POST|PUT|DELETE) \S*" + re.escape(volume_id) + r"\S*")
    return [m.group(0) for m in map(pattern.search, log.splitlines()[since_line:]) if m]


def _pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extends", type=int, default=20)
    parser.add_argument("--keep-state", action="store_true")
    args = parser.parse_args(argv)
    state = tempfile.mkdtemp(prefix="vs-bench-extend-", dir="/var/tmp")
    aio = Aio(state)
    try:
        aio.start()
        server = _boot(aio)
        attached = _new_volume(aio, "bench-attached")
        status, body = aio.nova("POST", f"/servers/{server}/os-volume_attachments",
                                {"volumeAttachment": {"volumeId": attached}})
        assert status == 200, body
        wait_for(lambda: _volume(aio, attached)["status"] == "in-use", 120, interval=0.2,
                 what="in-use")
        detached = _new_volume(aio, "bench-detached")

        log_start = len(aio.cinder_api_log().splitlines())
        ours = [_extend(aio, attached, 2 + i, _in_use_and_grown(aio, attached))
                for i in range(args.extends)]
        requests = _compute_requests(aio.cinder_api_log(), attached, log_start)
        cinder_only = [_extend(aio, detached, 2 + i, _available_at)
                       for i in range(args.extends)]
    finally:
        aio.stop()
        if not args.keep_state:
            shutil.rmtree(state, ignore_errors=True)

    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    p50, p99 = _pct(ours, 50), _pct(ours, 99)
    c50, c99 = _pct(cinder_only, 50), _pct(cinder_only, 99)
    print(f"volumesvc {head}, {args.extends} extends of an attached 1 GiB volume (+1 GiB each)")
    print(f"attached, completion flow: p50 {p50:.3f} s  p99 {p99:.3f} s  "
          f"mean {statistics.mean(ours):.3f} s")
    print(f"detached, Cinder alone:    p50 {c50:.3f} s  p99 {c99:.3f} s  "
          f"mean {statistics.mean(cinder_only):.3f} s")
    print(f"on top of Cinder (p50): {p50 - c50:.3f} s")
    print(f"Cinder requests by the compute: {len(requests)} in {args.extends} extends "
          f"({len(requests) / args.extends:.1f} per extend)")
    kinds = {}
    for line in requests:
        method, url = line.split("] ", 1)[1].split(" ", 1)
        path = re.sub(r"^https?://[^/]+", "", url).replace(attached, "{volume}")
        kinds[f"{method} {path}"] = kinds.get(f"{method} {path}", 0) + 1
    for kind, count in sorted(kinds.items()):
        print(f"    {count:3d} x {kind}")


if __name__ == "__main__":
    main()
