"""The README's first command: volumesvc-aio comes up, answers, and stops cleanly."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import sqlalchemy as sa

import volumesvc_aio as harness
from tests.integration.clients.helpers import drop_aio_leftovers, mariadb_admin
from tests.integration.conftest import bin_path, free_port
from volumesvc.api import microversions as mv
from volumesvc_aio import rabbit


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, json.load(resp)


def test_aio_ready_line_discovery_and_service_list():
    state = tempfile.mkdtemp(prefix="vs-aio-", dir="/var/tmp")
    api_port, volume_port, image_port = free_port(), free_port(), free_port()
    # A Cinder database an earlier deployment on this API port left (a run
    # that was killed): a new state dir must not start on its rows.
    stale = mariadb_admin()
    with stale.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE cinder_aio_{api_port}"))
        conn.execute(sa.text(f"CREATE TABLE cinder_aio_{api_port}.left_by_an_earlier_run "
                             "(id INT)"))
    proc = _start_aio(state, "aio-it", api_port, volume_port, image_port)
    lines = []
    try:
        deadline = time.monotonic() + 400
        ready = None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("volumesvc-aio: ready "):
                ready = line.strip()
                break
            assert time.monotonic() < deadline, "".join(lines[-30:])
        assert ready == (f"volumesvc-aio: ready compute=http://127.0.0.1:{api_port}/v2.1 "
                         f"volume=http://127.0.0.1:{volume_port}/v3"), "".join(lines[-30:])
        with stale.connect() as conn:
            tables = set(conn.execute(sa.text(f"SHOW TABLES FROM cinder_aio_{api_port}"))
                         .scalars())
        assert "left_by_an_earlier_run" not in tables and "volumes" in tables, tables

        status, root = _get(f"http://127.0.0.1:{api_port}/")
        assert status == 200 and [v["id"] for v in root["versions"]] == ["v2.0", "v2.1"]
        status, doc = _get(f"http://127.0.0.1:{api_port}/v2.1")
        assert doc["version"]["id"] == "v2.1" and doc["version"]["version"] == str(mv.MAX_VERSION)

        # The operator line after "ready": health check (and its drain file), metrics.
        operator_line = proc.stdout.readline().strip()
        assert operator_line.startswith(
            f"volumesvc-aio: health=http://127.0.0.1:{api_port}/healthcheck "), operator_line
        health_req = urllib.request.Request(f"http://127.0.0.1:{api_port}/healthcheck",
                                            headers={"Accept": "application/json"})
        status, health = _get(health_req)
        assert status == 200 and [r["reason"] for r in health["reasons"]] == ["OK", "OK"]
        assert health["detailed"] is True  # from 127.0.0.1, an allowed source
        drain = os.path.join(state, "healthcheck_disable")
        open(drain, "w").close()
        try:
            _get(health_req)
            raise AssertionError("a drained API answered its health check with 200")
        except urllib.error.HTTPError as exc:
            assert exc.code == 503
        os.remove(drain)
        with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/metrics", timeout=10) as resp:
            assert b"volumesvc_api_request_duration_seconds_count{" in resp.read()

        out = subprocess.run(
            [bin_path("volumesvc-manage"), "--config-file", os.path.join(state, "volumesvc.conf"),
             "service", "list", "--json"], check=True, capture_output=True, text=True).stdout
        computes = [r for r in json.loads(out) if r["binary"] == "volumesvc-compute"]
        assert [(r["host"], r["state"]) for r in computes] == [("aio-it", "up")]
        assert computes[0]["version"] >= 1
        assert computes[0]["capabilities"]["supports_multiattach"] is True

        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(120) == 0
        # Everything it started is gone: its ports are closed again.
        for port in (api_port, volume_port, image_port):
            assert not _port_open(port), port
    finally:
        # NOTE: SIGTERM first: the aio stops the services it started (each in a
        # process group of its own); a SIGKILL alone would leave them running.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(state, ignore_errors=True)
        drop_aio_leftovers(api_port)
        stale.dispose()


def _start_aio(state, host, api_port, volume_port, image_port):
    """volumesvc-aio (noauth2) on these ports, its output on ``proc.stdout``."""
    return subprocess.Popen(
        [bin_path("volumesvc-aio"), "--state-dir", state, "--api-port", str(api_port),
         "--volume-port", str(volume_port), "--image-port", str(image_port),
         "--key-manager-port", str(free_port()), "--host", host, "--no-install",
         "--auth", "noauth2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def test_aio_killed_with_sigkill_takes_its_services_along():
    """Regression: a SIGKILL of volumesvc-aio (which cannot stop anything
    itself) left Cinder, Glance and volumesvc's services running, holding
    their ports. They now get SIGTERM from the kernel when it dies."""
    state = tempfile.mkdtemp(prefix="vs-aio-", dir="/var/tmp")
    api_port, volume_port, image_port = free_port(), free_port(), free_port()
    proc = _start_aio(state, "aio-kill", api_port, volume_port, image_port)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("volumesvc-aio: ready "):
                break
        else:
            raise AssertionError("".join(lines[-30:]))
        assert _services_of(state), "no service of the aio found by its state dir"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (_services_of(state) or any(
                _port_open(p) for p in (api_port, volume_port, image_port))):
            time.sleep(0.5)
        assert _services_of(state) == [], "services outlived the aio"
        assert not any(_port_open(p) for p in (api_port, volume_port, image_port))
    finally:
        for pid in _services_of(state):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(state, ignore_errors=True)
        drop_aio_leftovers(api_port)


def _services_of(state):
    """Pids of processes whose command line names a file in ``state``."""
    return harness.pids_naming(state + "/")


def _port_open(port):
    return rabbit.port_open("127.0.0.1", port)
