"""What the storm scripts share: the HTTP client, set-up, probes and the script runner.

``attach_storm`` and ``boot_storm`` drive the same stack (``storm_stack``)
the same way: one client for volumesvc's compute API and Cinder's API, the
servers booted before a storm, the idle and during-storm GET probes, and a
runner that turns SIGTERM into the cleanup Ctrl-C gets.
"""

import http.client
import json
import resource
import signal
import sys
import threading
import time
import urllib.parse

from volumesvc.serving import gunicorn_workers

TOKEN = "admin:admin"  # noauth2 / Cinder noauth: admin user in project admin
CINDER_VERSION = "volume 3.67"  # no project id in URLs
PROBE_HZ = 5.0
# Seconds of quiet before "PSS after the storms" (and idle latency) is read:
# an API worker over [api] worker_private_memory_max is replaced once it has
# had no request for MEMORY_QUIET_SECONDS, at a check every
# MEMORY_CHECK_INTERVAL; plus time for the fresh worker to start.
PSS_SETTLE = (gunicorn_workers.MEMORY_QUIET_SECONDS + gunicorn_workers.MEMORY_CHECK_INTERVAL
              + 10.0)


class Client:
    def __init__(self, api_url, cinder_url, timeout, ssl_context=None):
        self.api_url = api_url
        self.cinder_url = cinder_url
        self.timeout = timeout
        # What an https API is verified with (the cluster deployment's CA).
        self.ssl_context = ssl_context
        # Seconds one Cinder volume list may take (volume_statuses). The all-in-one's
        # single cinder-api worker can take longer under an RBD storm (aio_storage).
        self.list_timeout = 60

    @staticmethod
    def _do(method, url, body, headers, timeout, context=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                               context=context)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        headers = {"X-Auth-Token": TOKEN, "Accept": "application/json", **headers}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""),
                         body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, raw[:300]

    def api(self, method, path, body=None, version="2.1", timeout=None):
        return self._do(method, self.api_url + path, body,
                        {"OpenStack-API-Version": f"compute {version}"},
                        timeout or self.timeout, self.ssl_context)

    def cinder(self, method, path, body=None, timeout=None):
        return self._do(method, self.cinder_url + path, body,
                        {"OpenStack-API-Version": CINDER_VERSION}, timeout or self.timeout)

    def volume_statuses(self, attempts=5, interval=1.0):
        """Every volume's status; a 5xx list is asked again (bounded).

        cinder-api can answer one list with a 500 under a storm (its own
        database pool); that says nothing about the attaches being measured.
        """
        for attempt in range(attempts):
            status, body = self.cinder("GET", "/volumes/detail?limit=1000",
                                       timeout=self.list_timeout)
            if status == 200:
                return {v["id"]: v["status"] for v in body["volumes"]}
            if status < 500 or attempt == attempts - 1:
                break
            time.sleep(interval)
        raise RuntimeError(f"Cinder volume list: HTTP {status} {body}")


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def check(status, body, expected, what):
    if status not in expected:
        raise RuntimeError(f"{what}: HTTP {status} {body}")


def list_servers(client, detail=True):
    """Every server, page by page (the API returns at most 1000 per page)."""
    found, marker = [], None
    for _ in range(1000):
        path = "/servers/detail?limit=1000" if detail else "/servers?limit=1000"
        if marker:
            path += f"&marker={marker}"
        status, body = client.api("GET", path, version="2.100")
        check(status, body, (200,), "server list")
        found += body["servers"]
        if len(body["servers"]) < 1000:
            return found
        marker = body["servers"][-1]["id"]
    return found


def boot_servers(client, image_id, count, timeout, wave=100):
    """``count`` ACTIVE servers, booted in waves of ``wave`` (POSTs of 25 each).

    Not measured. Waves keep the set-up of a 1000-server run from queueing
    a thousand builds on the one compute at once (the N=1000 run in
    ``benchmarks/results/2026-11-30-attach-storm.md``); a server in ERROR
    stops the run with its fault.
    """
    batch = 25
    deadline = time.monotonic() + timeout
    booted = 0
    while booted < count:
        in_wave = min(wave, count - booted)
        for first in range(booted, booted + in_wave, batch):
            k = min(batch, booted + in_wave - first)
            status, body = client.api("POST", "/servers", version="2.100", body={"server": {
                "name": f"storm-{first}", "imageRef": image_id, "flavorRef": "42",
                "networks": "none", "min_count": k, "max_count": k}})
            check(status, body, (202,), "boot")
        booted += in_wave
        while True:
            found = list_servers(client)
            states = [s["status"] for s in found]
            if "ERROR" in states:
                faults = {str(s.get("fault", {}).get("message"))[:200]
                          for s in found if s["status"] == "ERROR"}
                raise RuntimeError(f"{states.count('ERROR')} servers went to ERROR: {faults}")
            if len(found) == booted and all(st == "ACTIVE" for st in states):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"servers not ACTIVE after {timeout}s: {sorted(set(states))}")
            time.sleep(1.0)
    return sorted(s["id"] for s in list_servers(client))


def idle_gets(client, server, count=200, gap=0.02):
    latencies = []
    for _ in range(count):
        t0 = time.monotonic()
        status, body = client.api("GET", f"/servers/{server}", timeout=30)
        check(status, body, (200,), "idle GET")
        latencies.append(time.monotonic() - t0)
        time.sleep(gap)
    return latencies


class Probe:
    """GET /servers/{id} on a fixed 5/s schedule, each in its own thread.

    Latency counts from the scheduled send time, so a stalled API shows up
    as latency rather than as fewer samples.
    """

    def __init__(self, client, server, timeout):
        self.client, self.server, self.timeout = client, server, timeout
        self.samples = []  # (latency, ok)
        self.stop_event = threading.Event()
        self.threads = []
        self._lock = threading.Lock()
        self.runner = threading.Thread(target=self._run, daemon=True)

    def _one(self, scheduled):
        try:
            status, _ = self.client.api("GET", f"/servers/{self.server}", timeout=self.timeout)
            ok = status == 200
        except Exception:  # noqa: BLE001 - a failed probe is a sample too
            ok = False
        with self._lock:
            self.samples.append((time.monotonic() - scheduled, ok))

    def _run(self):
        start = time.monotonic()
        k = 0
        while not self.stop_event.is_set() and k < 100000:
            scheduled = start + k / PROBE_HZ
            delay = scheduled - time.monotonic()
            if delay > 0 and self.stop_event.wait(delay):
                break
            t = threading.Thread(target=self._one, args=(scheduled,), daemon=True)
            t.start()
            self.threads.append(t)
            k += 1

    def start(self):
        self.runner.start()

    def stop(self):
        self.stop_event.set()
        self.runner.join(5)
        for t in self.threads:
            t.join(self.timeout + 5)
        return [lat for lat, ok in self.samples if ok], sum(1 for _, ok in self.samples
                                                           if not ok)


def self_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def settle_api(client, server, warm=40):
    """Let the API reach its steady state before idle latency is measured.

    Booting the servers leaves API workers over ``[api]
    worker_private_memory_max``; they are replaced once idle, and a new
    worker's first requests open its connections. Measured then, "idle" p99
    would be inflated (80 ms instead of ~10) and every ratio to it flattered.
    """
    time.sleep(PSS_SETTLE)
    for _ in range(warm):
        client.api("GET", f"/servers/{server}", timeout=30)


def run_script(parse, body, argv=None):
    """Parse ``argv``, run ``body(args, argv)``; SIGTERM and Ctrl-C end it through its cleanup."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)

    def _interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return body(args, argv)
    except KeyboardInterrupt:
        log("interrupted")
        return 130
