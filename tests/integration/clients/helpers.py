"""Helpers of the clients suite: the real clients and the waits (see conftest.py)."""

import contextlib
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import pytest
import sqlalchemy as sa

import volumesvc_aio as harness
from tests.integration.conftest import bin_path, free_port
from volumesvc_aio import rabbit, system

SERVER_TIMEOUT = 120
ADMIN_TOKEN = "admin:admin"
COMPUTE_VERSION = "2.96"     # novaclient's maximum; the sdk caps servers at 2.100
VOLUME_VERSION = "3.67"      # /v3/<resource> without a project id


def nova_client(aio, token=ADMIN_TOKEN, version=COMPUTE_VERSION):
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint
    from novaclient import client as nova

    sess = ks_session.Session(auth=token_endpoint.Token(aio.compute_url, token))
    return nova.Client(version, session=sess)


def sdk_connection(aio, token=ADMIN_TOKEN):
    import openstack

    return openstack.connection.Connection(
        auth_type="admin_token", auth={"endpoint": aio.compute_url, "token": token},
        compute_api_version=COMPUTE_VERSION, identity_api_version="3",
        identity_endpoint_override=aio.compute_url, image_endpoint_override=aio.image_url)


def cinder_client(aio, token=ADMIN_TOKEN):
    from cinderclient import client as cinder
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint

    sess = ks_session.Session(auth=token_endpoint.Token(aio.volume_url, token))
    return cinder.Client(VOLUME_VERSION, session=sess)


def osc_argv(aio, token=ADMIN_TOKEN):
    return [bin_path("openstack"), "--os-auth-type", "admin_token",
            "--os-endpoint", aio.compute_url, "--os-token", token,
            "--os-compute-api-version", COMPUTE_VERSION, "--os-identity-api-version", "3"]


def osc_env(aio):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_IDENTITY_ENDPOINT_OVERRIDE"] = aio.compute_url
    env["OS_IMAGE_ENDPOINT_OVERRIDE"] = aio.image_url
    return env


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def wait_server(nova, server_id, status="ACTIVE", timeout=SERVER_TIMEOUT, aio=None):
    """Poll with novaclient until ``status``; fail at once on ERROR with the fault."""
    deadline = time.monotonic() + timeout
    while True:
        server = nova.servers.get(server_id)
        if server.status == status:
            return server
        if server.status == "ERROR" or time.monotonic() > deadline:
            pytest.fail(f"server {server_id} is {server.status} "
                        f"(task {getattr(server, 'OS-EXT-STS:task_state', None)}, fault "
                        f"{getattr(server, 'fault', None)}), wanted {status}\n"
                        + (aio.logs(20) if aio else ""))
        time.sleep(0.5)


def sdk_wait_active(sdk, server, aio, timeout=SERVER_TIMEOUT):
    """openstacksdk's own wait_for_server; on a timeout fail with the server's state and logs."""
    from openstack import exceptions as sdk_exc

    try:
        return sdk.compute.wait_for_server(server, status="ACTIVE", wait=timeout)
    except (sdk_exc.ResourceTimeout, sdk_exc.ResourceFailure):
        now = sdk.compute.get_server(server.id)
        pytest.fail(f"server {server.id} is {now.status} (vm {now.vm_state}, task "
                    f"{now.task_state}, fault {now.fault}) after {timeout}s"
                    f"\n{aio.logs(30)}")


def wait_server_gone(nova, server_id, timeout=SERVER_TIMEOUT):
    from novaclient import exceptions as nova_exc

    deadline = time.monotonic() + timeout
    while True:
        try:
            server = nova.servers.get(server_id)
        except nova_exc.NotFound:
            return
        if server.status == "ERROR" or time.monotonic() > deadline:
            pytest.fail(f"server {server_id} is {server.status} after delete, fault "
                        f"{(getattr(server, 'fault', None) or {}).get('message')}")
        time.sleep(0.5)


@contextlib.contextmanager
def volume_backed_server(aio, nova, prefix):
    """An ACTIVE m1.nano server booted from a blank 1 GiB volume; deleted after."""
    bdm = [{"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "boot_index": 0, "delete_on_termination": True}]
    created = nova.servers.create(unique(prefix), image=None, flavor="42",
                                  block_device_mapping_v2=bdm, nics="none")
    try:
        yield wait_server(nova, created.id, aio=aio)
    finally:
        delete_server_quietly(nova, created.id)


def delete_server_quietly(nova, server_id):
    """Cleanup path: delete if it still exists and wait until it is gone."""
    from novaclient import exceptions as nova_exc

    try:
        nova.servers.delete(server_id)
    except nova_exc.NotFound:
        return
    with contextlib.suppress(BaseException):
        wait_server_gone(nova, server_id)


def wait_volume(cinder, volume_id, status, timeout=SERVER_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        volume = cinder.volumes.get(volume_id)
        if volume.status == status:
            return volume
        if volume.status.startswith("error") or time.monotonic() > deadline:
            pytest.fail(f"volume {volume_id} is {volume.status}, wanted {status}")
        time.sleep(0.5)


def wait_volume_gone(cinder, volume_id, timeout=SERVER_TIMEOUT):
    from cinderclient import exceptions as cinder_exc

    deadline = time.monotonic() + timeout
    while True:
        try:
            volume = cinder.volumes.get(volume_id)
        except cinder_exc.NotFound:
            return
        if volume.status.startswith("error") or time.monotonic() > deadline:
            pytest.fail(f"volume {volume_id} still there ({volume.status}); "
                        f"delete_on_termination was true")
        time.sleep(0.5)


def delete_volume_quietly(cinder, volume_id):
    from cinderclient import exceptions as cinder_exc

    with contextlib.suppress(cinder_exc.NotFound):
        cinder.volumes.delete(volume_id)
        with contextlib.suppress(BaseException):
            wait_volume_gone(cinder, volume_id)


def wait_snapshot_gone(cinder, snapshot_id, timeout=SERVER_TIMEOUT):
    from cinderclient import exceptions as cinder_exc

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            cinder.volume_snapshots.get(snapshot_id)
        except cinder_exc.NotFound:
            return
        time.sleep(0.5)
    pytest.fail(f"snapshot {snapshot_id} still there")


def glance_image(aio, image_id):
    """GET /v2/images/<id> from the aio's Glance (no auth); None when it is gone."""
    try:
        with urllib.request.urlopen(f"{aio.image_url}/v2/images/{image_id}", timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def glance_upload_raw(aio, data, prefix):
    """A public raw/bare image holding ``data`` in the aio's Glance (no auth); its id."""
    req = urllib.request.Request(
        f"{aio.image_url}/v2/images", method="POST",
        data=json.dumps({"name": unique(prefix), "disk_format": "raw",
                         "container_format": "bare", "visibility": "public"}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        image_id = json.load(resp)["id"]
    req = urllib.request.Request(f"{aio.image_url}/v2/images/{image_id}/file", method="PUT",
                                 data=data,
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(req, timeout=120).close()
    return image_id


def glance_delete(aio, image_id):
    req = urllib.request.Request(f"{aio.image_url}/v2/images/{image_id}", method="DELETE")
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(req, timeout=10).close()


def attached_volume_ids(server):
    """Volume ids of a novaclient Server, in BDM order."""
    return [v["id"] for v in getattr(server, "os-extended-volumes:volumes_attached")]


def server_attr(server, key):
    return server.to_dict()[key]


# -- raw HTTP and the live domain ---------------------------------------------------

def compute_http(aio, method, path, body=None, version="2.1"):
    req = urllib.request.Request(
        aio.compute_url + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"X-Auth-Token": ADMIN_TOKEN, "OpenStack-API-Version": f"compute {version}",
                 "Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else None), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, (json.loads(raw) if raw else None), dict(exc.headers)


def domain_xml(aio, server_id):
    """The live domain's XML, as the compute reads it from libvirt."""
    return subprocess.run(
        [bin_path("volumesvc-manage"), "--config-file",
         os.path.join(aio.state_dir, "volumesvc.conf"), "server", "domain-xml", server_id],
        capture_output=True, text=True, timeout=60, check=True).stdout


def domain_disks(aio, server_id):
    """Serial → source file of the live domain, as the compute reads it from libvirt.

    A Ceph disk's source is ``rbd:<pool>/<image>``.
    """
    import xml.etree.ElementTree as ET

    disks = {}
    for disk in ET.fromstring(domain_xml(aio, server_id)).findall("./devices/disk"):
        source = disk.find("source")
        disks[disk.findtext("serial")] = source.get("file") or source.get("dev") or (
            f"rbd:{source.get('name')}" if source.get("protocol") == "rbd" else None)
    return disks


def domain_disk(aio, server_id, volume_id):
    """The live domain's disk whose serial is the volume id (a ``DiskInfo``), once there."""
    from volumesvc.virt.libvirt import config

    def find():
        return {d.serial: d for d in config.parse_disks(domain_xml(aio, server_id))}.get(
            volume_id)
    return wait_until(find, f"disk {volume_id} in {server_id}")


def cinder_attach_mode(cinder, server_id, volume_id):
    """``attach_mode`` of the server's Cinder attachment of the volume (``ro``/``rw``)."""
    (entry,) = [a for a in cinder.volumes.get(volume_id).attachments
                if a["server_id"] == server_id]
    return cinder.attachments.show(entry["attachment_id"]).attach_mode


def wait_until(predicate, what, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}")


# -- the all-in-one --------------------------------------------------------------

READY_TIMEOUT = 400
_READY = re.compile(r"^volumesvc-aio: ready compute=(\S+) volume=(\S+)$")
_IMAGE = re.compile(r"Glance \((?:no auth|keystone)\): (\S+)\s+starter image: (\S+)")
_IDENTITY = re.compile(r"^volumesvc-aio: identity=(\S+) clouds.yaml=(\S+)$", re.M)


@dataclasses.dataclass
class Aio:
    state_dir: str
    api_port: int
    proc: subprocess.Popen
    out_path: str
    compute_url: str = ""
    volume_url: str = ""
    image_url: str = ""
    image_id: str = ""
    identity_url: str = ""
    clouds_yaml: str = ""
    returncode: int | None = None
    leftover_qemu: list = dataclasses.field(default_factory=list)

    def logs(self, lines=40):
        """The tail of every service log, then the aio's own output, for failure messages.

        The aio's output (which says why it stopped) comes last: a CI log
        that keeps only the end of a long failure message still shows it.
        """
        parts = []
        paths = [*sorted(glob.glob(os.path.join(self.state_dir, "logs", "*.log"))),
                 *sorted(glob.glob(os.path.join(self.state_dir, "cinder", "log", "*.log"))),
                 *sorted(glob.glob(os.path.join(self.state_dir, "glance", "log", "*.log"))),
                 *sorted(glob.glob(os.path.join(self.state_dir, "keystone", "log", "*.log"))),
                 self.out_path]
        for path in paths:
            with contextlib.suppress(OSError), open(path, errors="replace") as f:
                tail = "".join(f.readlines()[-lines:])
            parts.append(f"==> {path} <==\n{tail}")
        return "\n".join(parts)

    def qemu_pids(self):
        """QEMU processes whose command line points into this all-in-one's state dir."""
        return harness.qemu_pids(self.state_dir + "/")

    def stop(self):
        """SIGTERM (the documented way), then SIGKILL the group if it hangs; idempotent."""
        if self.returncode is not None or self.proc.poll() is not None:
            self.returncode = self.proc.returncode
            return self.returncode
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.returncode = self.proc.wait(120)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            self.returncode = None
        return self.returncode


@contextlib.contextmanager
def running_aio(prefix, extra_args=(), auth="noauth2", storage="file"):
    """Start ``volumesvc-aio`` on free ports, wait for its ready line, stop and clean up after.

    ``extra_args`` go to ``volumesvc-aio`` after ours; ``{host}`` in them
    stands for the first compute's host name (e.g. ``--compute-driver
    {host}-2=libvirt,-supports_multiattach`` with ``--computes 2``).
    ``auth`` is its ``--auth``: this suite uses noauth2 (endpoint-only
    clients); ``tests/integration/keystone`` passes keystone and reads the
    identity URL and clouds.yaml path from the output. ``storage`` is its
    ``--storage`` (``file``: no Ceph, computes on embedded QEMU, so suites run
    side by side without a shared libvirt daemon); None leaves the default
    (Ceph, ``tests/integration/storage/test_aio_rbd.py``).

    Fails (never skips) with its output and log tails if it does not come up.
    After the stop, QEMU processes of its state dir still running are recorded
    in ``leftover_qemu`` and killed (they were started by this all-in-one).
    """
    state = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    api_port, volume_port, image_port = free_port(), free_port(), free_port()
    out_path = os.path.join(state, "aio.out")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(
            [bin_path("volumesvc-aio"), "--state-dir", state, "--api-port", str(api_port),
             "--volume-port", str(volume_port), "--image-port", str(image_port),
             "--identity-port", str(free_port()), "--key-manager-port", str(free_port()),
             "--auth", auth,
             "--host", f"clients-{api_port}", "--no-install",
             # NOTE: below ours, so that a wait that does not end is reported
             # by the aio itself (which service it waited for), not cut off.
             "--ready-timeout", str(READY_TIMEOUT - 100),
             *(("--storage", storage) if storage else ()),
             *(arg.format(host=f"clients-{api_port}") for arg in extra_args)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    handle = Aio(state, api_port, proc, out_path)
    try:
        started = time.monotonic()
        deadline = started + READY_TIMEOUT
        while True:
            with open(out_path, errors="replace") as f:
                text = f.read()
            ready = next((m for m in map(_READY.match, text.splitlines()) if m), None)
            image = _IMAGE.search(text)
            if ready and image:
                break
            if proc.poll() is not None:
                why = f"exited with {proc.returncode} after {time.monotonic() - started:.0f}s"
            elif time.monotonic() > deadline:
                why = f"not ready after {READY_TIMEOUT}s"
            else:
                time.sleep(0.5)
                continue
            pytest.fail(f"volumesvc-aio {why}, before it was ready:\n{handle.logs()}\n"
                        f"(volumesvc-aio {why})")
        handle.compute_url, handle.volume_url = ready.group(1), ready.group(2)
        handle.image_url, handle.image_id = image.group(1), image.group(2)
        identity = _IDENTITY.search(text)
        if identity:
            handle.identity_url, handle.clouds_yaml = identity.group(1), identity.group(2)
        yield handle
    finally:
        handle.stop()
        time.sleep(1)
        handle.leftover_qemu = handle.qemu_pids()
        for pid in handle.leftover_qemu:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if os.environ.get("VOLUMESVC_KEEP_AIO"):
            print(f"volumesvc-aio state kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)
        drop_aio_leftovers(api_port)


def mariadb_admin():
    """An AUTOCOMMIT engine on the local MariaDB as its administrator."""
    return sa.create_engine(system.MARIADB_ADMIN_URL + "/", isolation_level="AUTOCOMMIT")


def drop_aio_leftovers(api_port):
    """The all-in-one keeps its Cinder database and vhosts for restarts; a test does not."""
    tag = f"aio-{api_port}"
    engine = mariadb_admin()
    with engine.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS cinder_{tag.replace('-', '_')}"))
    engine.dispose()
    for vhost in (f"volumesvc-{tag}", f"cinder-{tag}"):
        rabbit.delete_vhost(vhost)
