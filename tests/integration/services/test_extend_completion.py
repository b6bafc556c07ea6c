"""Extending an attached volume with a real Cinder 29 and real QEMU (spec 3, API 2.105).

One Cinder with the harness's test-only extend-completion extension (volumes
wait in ``extending``; ``extend_new_size`` shown in ``metadata``) posts its
events to one volumesvc deployment (api, conductor, compute as processes,
embedded QEMU). The file driver does not touch an attached volume's file:
QEMU holds it, so the compute's block resize is what grows it, and Cinder
only records the outcome. A volume with ``volumesvc_stock_extend=true`` takes
Cinder's stock path (Cinder grows the file, then posts the event at 2.51).
"""

import os
import pathlib
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

import volumesvc_aio as harness
from tests.integration.conftest import Deployment, bin_path, free_port
from volumesvc_aio import config as aio_config
from volumesvc_aio import rabbit, system
from volumesvc_aio.cinder import CinderHarness

GiB = 1 << 30
HOST = "it-extend"
SHOWN_KEY = "volumesvc_test_shown_extend_new_size"


class Env:
    def __init__(self, dep, cinder, cinder_api, conf_path):
        self.dep = dep
        self.cinder = cinder
        self.api = cinder_api
        self.conf_path = conf_path
        from volumesvc.context import RequestContext

        self.ctx = RequestContext(user_id="admin", project_id="admin", is_admin=True,
                                  roles=["admin"])

    def volume_file(self, volume_id):
        return os.path.join(self.cinder.volumes_dir, f"volume-{volume_id}")

    def compute_log(self):
        return (pathlib.Path(self.dep.tmp_path) / "volumesvc-compute.log").read_text()

    def db(self):
        from volumesvc.conf import get_conf
        from volumesvc.db import api as db_api

        return db_api.Database(get_conf(args=["--config-file", self.conf_path],
                                        default_config_files=[]))


@pytest.fixture(scope="module")
def env():
    state = pathlib.Path(tempfile.mkdtemp(prefix="vs-ext-", dir="/var/tmp"))
    tag = uuid.uuid4().hex[:8]
    vhosts = [f"vs-it-extc-{tag}", f"vs-it-ext-{tag}"]
    cinder_db = f"vs_it_extc_{tag}"
    api_port = free_port()
    cinder = CinderHarness(
        str(state / "cinder"), port=free_port(), transport_url=rabbit.ensure_vhost(vhosts[0]),
        database_connection=system.mariadb_database(cinder_db),
        nova_endpoint=f"http://127.0.0.1:{api_port}/v2.1", extend_completion=True)
    dep = None
    try:
        cinder.install()
        cinder.configure()
        cinder.start()
        cinder.wait_ready(180)
        conf_path = aio_config.write_config(
            str(state), transport_url=rabbit.ensure_vhost(vhosts[1]), api_port=api_port,
            api_workers=1, host=HOST, cinder_url=cinder.url, glance_url="http://127.0.0.1:9")
        subprocess.run([bin_path("volumesvc-manage"), "--config-file", conf_path, "db",
                        "sync"], check=True, capture_output=True, timeout=120)
        dep = Deployment(state, conf_path, api_port)
        for binary in ("volumesvc-conductor", "volumesvc-compute", "volumesvc-api"):
            dep.spawn(binary)
        harness.wait_for(lambda: dep.compute_state() == "up", 120, what="compute up",
                         interval=1)
        from volumesvc.conf import get_conf
        from volumesvc.volume.cinder import CinderAPI

        conf = get_conf(args=[], default_config_files=[])
        conf.set_override("auth_strategy", "noauth", "cinder")
        conf.set_override("endpoint_override", cinder.url, "cinder")
        yield Env(dep, cinder, CinderAPI(conf), conf_path)
    finally:
        for child in (dep.children.values() if dep else ()):
            child.stop()
        harness.stop_qemu_guests(str(state) + "/")
        cinder.stop()
        for vhost in vhosts:
            rabbit.delete_vhost(vhost)
        subprocess.run(["mysql", "-uroot", "-e", f"DROP DATABASE IF EXISTS {cinder_db}"],
                       capture_output=True, check=False)
        if not os.environ.get("VOLUMESVC_KEEP_CINDER"):
            shutil.rmtree(state, ignore_errors=True)


def _wait(predicate, what, timeout=90):
    return harness.wait_for(predicate, timeout, what=what, interval=0.3)


@pytest.fixture(scope="module")
def server(env):
    status, body = env.dep.request("POST", "/servers", {"server": {
        "name": "extend", "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": [{"source_type": "blank", "destination_type": "volume",
                                     "boot_index": 0, "volume_size": 1,
                                     "delete_on_termination": True}]}}, version="2.67")
    assert status == 202, (body, env.dep.logs())
    server_id = body["server"]["id"]

    def active():
        _, show = env.dep.request("GET", f"/servers/{server_id}")
        if show["server"]["status"] == "ERROR":
            pytest.fail(f"server went ERROR: {show['server'].get('fault')}\n{env.dep.logs()}")
        return show["server"]["status"] == "ACTIVE"
    _wait(active, "server ACTIVE", timeout=180)
    return server_id


def _attached_volume(env, server, metadata=None):
    volume = env.api.create(env.ctx, 1, "extend-it", "", metadata=metadata)
    _wait(lambda: env.api.get(env.ctx, volume["id"])["status"] == "available", "available")
    status, body = env.dep.request("POST", f"/servers/{server}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume["id"]}},
                                   version="2.100")
    assert status == 200, (body, env.dep.logs())
    _wait(lambda: env.api.get(env.ctx, volume["id"])["status"] == "in-use", "in-use")
    return volume["id"]


def _settled(env, volume_id, statuses=("in-use", "error_extending")):
    def check():
        volume = env.api.get(env.ctx, volume_id)
        return volume if volume["status"] in statuses else None
    return _wait(check, f"volume {volume_id} in {statuses}")


def _extend_actions(env, server):
    _, body = env.dep.request("GET", f"/servers/{server}/os-instance-actions", version="2.84")
    return [a["request_id"] for a in body["instanceActions"] if a["action"] == "extend_volume"]


def _extend_event(env, server, before):
    """The compute_extend_volume event of the extend_volume action not in ``before``."""
    def finished():
        new = [r for r in _extend_actions(env, server) if r not in before]
        if not new:
            return None
        _, one = env.dep.request("GET", f"/servers/{server}/os-instance-actions/{new[0]}",
                                 version="2.84")
        events = [e for e in one["instanceAction"]["events"]
                  if e["event"] == "compute_extend_volume" and e["finish_time"]]
        return events[0] if events else None
    return _wait(finished, "compute_extend_volume finished")


def _bdm_size(env, server, volume_id):
    from volumesvc.context import get_admin_context
    from volumesvc.objects import block_device as bdm_obj

    db = env.db()
    try:
        return bdm_obj.get_by_volume_and_instance(db, get_admin_context(), volume_id,
                                                  server).volume_size
    finally:
        db.dispose()


def _guest_line(env, volume_id):
    """The compute's log line with the size the guest sees (libvirt blockInfo)."""
    lines = [line for line in env.compute_log().splitlines()
             if f"Volume {volume_id} of instance" in line and "resized to" in line]
    return lines[-1] if lines else ""


def test_completion_extends_file_guest_bdm_and_cinder(env, server):
    volume_id = _attached_volume(env, server)
    before = _extend_actions(env, server)
    started = time.monotonic()
    env.api.extend(env.ctx, volume_id, 2)
    volume = _settled(env, volume_id)
    elapsed = time.monotonic() - started
    assert (volume["status"], volume["size"]) == ("in-use", 2), env.compute_log()[-3000:]
    assert "extend_new_size" not in volume["metadata"]
    assert os.path.getsize(env.volume_file(volume_id)) == 2 * GiB
    assert f"(the guest sees {2 * GiB} bytes) and completed with Cinder" in \
        _guest_line(env, volume_id)
    event = _extend_event(env, server, before)
    assert event["result"] == "Success", event
    assert _bdm_size(env, server, volume_id) == 2
    assert elapsed < 60


@pytest.mark.parametrize("shown, reason", [
    ("", "has no extend_new_size metadata"),
    ("two", "is not a whole number of GiB"),
    ("1", "is not larger than the current size 1"),
], ids=["missing", "not-a-number", "not-larger"])
def test_bad_target_ends_in_error_extending(env, server, shown, reason):
    volume_id = _attached_volume(env, server, metadata={SHOWN_KEY: shown})
    before = _extend_actions(env, server)
    env.api.extend(env.ctx, volume_id, 2)
    volume = _settled(env, volume_id)
    assert (volume["status"], volume["size"]) == ("error_extending", 1)
    assert os.path.getsize(env.volume_file(volume_id)) == GiB
    event = _extend_event(env, server, before)
    assert event["result"] == "Error" and reason in event["details"], event
    assert reason in env.compute_log()




def test_stock_cinder_flow_still_grows_the_guest(env, server):
    volume_id = _attached_volume(env, server, metadata={"volumesvc_stock_extend": "true"})
    before = _extend_actions(env, server)
    env.api.extend(env.ctx, volume_id, 2)
    volume = _settled(env, volume_id)
    assert (volume["status"], volume["size"]) == ("in-use", 2)
    event = _extend_event(env, server, before)
    assert event["result"] == "Success", event
    assert _bdm_size(env, server, volume_id) == 2
    assert f"resized to 2 GiB (the guest sees {2 * GiB} bytes)" in _guest_line(env, volume_id)


def test_failing_block_resize_ends_in_error_extending(env, server):
    volume_id = _attached_volume(env, server)
    path = env.volume_file(volume_id)
    before = _extend_actions(env, server)
    # An immutable file: QEMU's truncate in blockResize fails with EPERM.
    subprocess.run(["chattr", "+i", path], check=True)
    try:
        env.api.extend(env.ctx, volume_id, 2)
        volume = _settled(env, volume_id)
    finally:
        subprocess.run(["chattr", "-i", path], check=True)
    assert (volume["status"], volume["size"]) == ("error_extending", 1)
    assert os.path.getsize(path) == GiB
    event = _extend_event(env, server, before)
    assert event["result"] == "Error", event
    assert "Could not resize file: Operation not permitted" in event["details"], event
    assert f"Extend of volume {volume_id} on instance {server} failed" in env.compute_log()


def test_driver_without_extend_ends_in_error_extending(env, server):
    extra = pathlib.Path(env.dep.tmp_path) / "no-extend.conf"
    extra.write_text("[virt]\ndisabled_capabilities = supports_extend_volume\n")

    def restart_compute(*more):
        env.dep.stop("volumesvc-compute")
        child = harness.ProcessGroup(
            "volumesvc-compute",
            [bin_path("volumesvc-compute"), "--config-file", env.dep.conf, *more],
            log_path=str(pathlib.Path(env.dep.tmp_path) / "volumesvc-compute.log")).start()
        env.dep.children["volumesvc-compute"] = child
        # Up again once it heartbeats with its capabilities.
        _wait(lambda: env.dep.services()["volumesvc-compute"]["capabilities"]
              .get("supports_extend_volume") is (not more), "compute restarted", 120)

    volume_id = _attached_volume(env, server)
    restart_compute("--config-file", str(extra))
    try:
        before = _extend_actions(env, server)
        env.api.extend(env.ctx, volume_id, 2)
        volume = _settled(env, volume_id)
        assert (volume["status"], volume["size"]) == ("error_extending", 1)
        event = _extend_event(env, server, before)
        assert event["result"] == "Error" and "not supported by the hypervisor" in \
            event["details"], event
    finally:
        restart_compute()
