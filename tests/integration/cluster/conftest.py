"""One cluster deployment (``volumesvc_aio.cluster``) for the cluster tier.

Computes in network namespaces, each with its own libvirt daemon, two API
nodes behind HAProxy, two conductors, a 3-node RabbitMQ cluster, a
PostgreSQL of its own, Keystone and a Ceph on the bridge; every request of
these tests goes through the load balancer with a Keystone token. ``test_mariadb_tier``
brings up a second deployment with volumesvc's database on MariaDB, after
this one has stopped. The fixture stops
everything and checks that no namespace, link, libvirt daemon, Ceph daemon or
QEMU guest is left.
"""

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from volumesvc_aio import netns, pids_naming, qemu_pids
from volumesvc_aio.cluster import Cluster, pids_with_environment_naming

TIMEOUT = 240
# Keystone's tokens live an hour; the tests take a new one well before.
TOKEN_MAX_AGE = 1200


# The deployments of this tier that are up: at most one at a time (see
# deployment() below).
_running = []
# Modules whose deployment is not the package's ``cluster``: they run after
# every test that uses it (pytest_collection_modifyitems below).
OWN_DEPLOYMENT_MODULES = ("test_mariadb_tier.py",)


def pytest_collection_modifyitems(session, config, items):
    """Run the modules with a deployment of their own after the rest of this package.

    The package-scoped ``cluster`` lives until the package's last test; a
    module with its own deployment stops it first (``deployment``), so it
    must come after every test that still needs it.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    positions = [i for i, item in enumerate(items)
                 if os.path.dirname(str(item.path)) == here]
    mine = [items[i] for i in positions]
    own = [item for item in mine if item.path.name in OWN_DEPLOYMENT_MODULES]
    ordered = [item for item in mine if item not in own] + own
    for i, item in zip(positions, ordered, strict=True):
        items[i] = item


@contextlib.contextmanager
def deployment(state_dir, prefix, **options):
    """A started :class:`Cluster`, stopped and checked clean afterwards.

    One deployment of this tier at a time: starting one stops any other
    still up (the package's PostgreSQL one when the MariaDB module starts).
    Two of them would share the machine's two cores with each other's QEMU
    guests and RabbitMQ nodes; their prefixes, subnets and port offsets
    differ as well, so a leftover of one never collides with the other.
    """
    for other in list(_running):
        other.stop()
        _running.remove(other)
    cluster = Cluster(state_dir, prefix=prefix, **options)
    _running.append(cluster)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        if cluster in _running:
            _running.remove(cluster)
    assert leftovers(state_dir, prefix) == {}
    shutil.rmtree(state_dir, ignore_errors=True)


def processes_mounting(path):
    """PIDs of processes with a mount (in whatever mount namespace they are) of ``path``."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError), open(f"/proc/{entry}/mountinfo") as f:
            if path in f.read():
                found.append(int(entry))
    return found


def leftovers(state_dir, prefix):
    """What a stopped deployment left on the machine, by kind (nothing: ``{}``)."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           timeout=30, check=True).stdout
    found = {
        "namespaces": [ns for ns in netns.namespaces() if ns.startswith(f"{prefix}-")],
        "links": [line.split(":")[1].strip() for line in links.splitlines()
                  if line.split(":")[1].strip().startswith(f"{prefix}-")],
        "qemu": qemu_pids(state_dir + "/"),
        "processes": sorted({*pids_naming(state_dir + "/"),
                             *pids_with_environment_naming(state_dir + "/")}),
        # The bind mounts of the hosts' libvirt daemons live as long as a
        # process of their mount namespace does.
        "mounts": processes_mounting(state_dir),
    }
    return {kind: what for kind, what in found.items() if what}


@pytest.fixture(scope="package")
def cluster():
    """Package scope: the deployment (three RabbitMQ nodes, PostgreSQL, QEMU
    guests) stops once this tier's tests are done, not at the end of the
    whole integration run, whose other tiers need the machine's cores."""
    with deployment(f"/var/tmp/vs-cluster-{uuid.uuid4().hex[:8]}", "vsct",
                    subnet="10.251.1.0/24") as up:
        yield up


@pytest.fixture(autouse=True)
def computes_in_service(request):
    """Each test of the cluster starts with every compute up, enabled and not forced down.

    Why: a test that killed a compute (or forced its service down) starts it
    again in its cleanup and leaves at once; the next test would otherwise
    boot onto a host whose compute has not reported since its restart and
    be refused with "No valid host" for a reason that is not its own.
    """
    if "api" in request.fixturenames:
        api = request.getfixturevalue("api")
        wait_until(lambda: not computes_out_of_service(api),
                   "every compute up, enabled and not forced down", timeout=300,
                   cluster=request.getfixturevalue("cluster"))
    yield


def computes_out_of_service(api):
    """The compute services of the deployment that are not up and in service."""
    status, body = api.nova("GET", "/os-services?binary=volumesvc-compute", version="2.53")
    assert status == 200, body
    return [(s["host"], s["state"], s["status"], s["forced_down"]) for s in body["services"]
            if (s["state"], s["status"], s["forced_down"]) != ("up", "enabled", False)]


def http(method, url, body=None, headers=None, timeout=120, *, token, context=None):
    """(status, parsed body or None); a connection that fails gives (None, reason).

    ``context``: what an ``https`` URL's server is verified with (the
    deployment's CA: ``Cluster.ssl_context``).
    """
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        "X-Auth-Token": token, "Content-Type": "application/json",
        "Accept": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw) if raw else None
        except ValueError:
            return exc.code, raw.decode(errors="replace")
    except (OSError, urllib.error.URLError) as exc:
        return None, str(exc)


class Api:
    """The compute API through the load balancer, Cinder and Glance, as the admin."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.compute = f"{cluster.lb_url}/v2.1"
        self.volume = cluster.cinder.url
        self.tls = cluster.ssl_context()
        self._image_id = None
        self._token = (None, 0.0)

    def token(self):
        """The admin's token: Keystone's, renewed before it expires (noauth2: admin:admin)."""
        token, taken = self._token
        if token is None or time.monotonic() - taken > TOKEN_MAX_AGE:
            self._token = (self.cluster.token(), time.monotonic())
        return self._token[0]

    def nova(self, method, path, body=None, version="2.1", timeout=120):
        return http(method, self.compute + path, body,
                    {"OpenStack-API-Version": f"compute {version}"}, timeout,
                    token=self.token(), context=self.tls)

    def cinder(self, method, path, body=None, version="3.67"):
        return http(method, self.volume + path, body,
                    {"OpenStack-API-Version": f"volume {version}"}, token=self.token())

    def create_volume(self, name, size=1, **extra):
        status, body = self.cinder("POST", "/volumes",
                                   {"volume": {"size": size, "name": name, **extra}})
        assert status == 202, body
        return body["volume"]["id"]

    def volume_status(self, volume_id):
        status, body = self.cinder("GET", f"/volumes/{volume_id}")
        return body["volume"] if status == 200 else None

    def boot(self, name, *, volume_type=None, version="2.67", image=False, host=None,
             user_data=None):
        bdm = {"boot_index": 0, "destination_type": "volume", "volume_size": 1,
               "delete_on_termination": True}
        if image:
            bdm.update(source_type="image", uuid=self.image_id())
        else:
            bdm.update(source_type="blank")
        if volume_type:
            bdm["volume_type"] = volume_type
        server = {"name": name, "flavorRef": "42", "networks": "none",
                  "block_device_mapping_v2": [bdm]}
        if host is not None:
            server["host"] = host  # 2.74
        if user_data is not None:  # a script the real guest runs, from its config drive
            server.update(user_data=base64.b64encode(user_data.encode()).decode(),
                          config_drive=True)
        return self.nova("POST", "/servers", {"server": server}, version=version)

    def image_id(self):
        """The starter image, looked up once (Glance's database may be the one restarted)."""
        if self._image_id is None:
            status, body = http("GET", f"{self.cluster.glance.url}/v2/images"
                                       "?name=volumesvc-tiny-raw", token=self.token())
            assert status == 200, body
            self._image_id = body["images"][0]["id"]
        return self._image_id

    def server(self, server_id):
        status, body = self.nova("GET", f"/servers/{server_id}", version="2.96")
        return body["server"] if status == 200 else None

    def attachments(self, server_id, version="2.106"):
        status, body = self.nova("GET", f"/servers/{server_id}/os-volume_attachments",
                                 version=version)
        assert status == 200, body
        return body["volumeAttachments"]

    def attach(self, server_id, volume_id, version="2.101"):
        return self.nova("POST", f"/servers/{server_id}/os-volume_attachments",
                         {"volumeAttachment": {"volumeId": volume_id}}, version=version)

    def cinder_attachments(self, volume_id):
        status, body = self.cinder("GET", f"/attachments?volume_id={volume_id}")
        assert status == 200, body
        return body["attachments"]

    def delete_server(self, server_id):
        self.nova("DELETE", f"/servers/{server_id}")


@pytest.fixture(scope="package")
def api(cluster):
    return Api(cluster)


def wait_until(predicate, what, timeout=TIMEOUT, cluster=None, interval=1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    logs = cluster_logs(cluster) if cluster is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{logs}")


def cluster_logs(cluster, lines=15):
    return "\n".join(f"--- {name}\n{proc.tail(lines)}" for name, proc in cluster.procs.items()
                     if name.startswith(("api-", "conductor-", "compute-")))


def api_errors(cluster, lines=40):
    """The API nodes' logged unexpected errors (message and traceback), for a 500's assertion."""
    found = []
    for name, proc in cluster.procs.items():
        if not name.startswith("api-"):
            continue
        with contextlib.suppress(OSError), open(proc.log_path, errors="replace") as f:
            text = f.readlines()
        starts = [n for n, line in enumerate(text) if "Unexpected error" in line]
        for start in starts[-2:]:
            found.append(f"--- {name}\n" + "".join(text[start:start + lines]))
    return "\n".join(found) or "(no unexpected error in the API nodes' logs)"


def log_lines(cluster, needles, limit=60):
    """Every service's log lines naming one of ``needles`` (volume or server ids), for
    an assertion about what happened to them; the state dir is gone after the test."""
    found = []
    for name, proc in cluster.procs.items():
        with contextlib.suppress(OSError), open(proc.log_path, errors="replace") as f:
            found += [f"{name}: {line.rstrip()[:400]}" for line in f
                      if any(needle in line for needle in needles)]
    return "\n".join(found[-limit:]) or f"(no log line names {needles})"


def wait_active(api, server_id, cluster=None):
    def active():
        server = api.server(server_id)
        assert server is None or server["status"] != "ERROR", (
            server_id, server.get("fault"), cluster and log_lines(cluster, [server_id]))
        return server if server and server["status"] == "ACTIVE" else None
    return wait_until(active, f"server {server_id} ACTIVE", cluster=cluster)


def manage(cluster, *args):
    bindir = os.path.dirname(sys.executable)
    return subprocess.run([os.path.join(bindir, "volumesvc-manage"), "--config-file",
                           cluster.conf_path, *args], capture_output=True, text=True,
                          timeout=300)


def audit(cluster):
    """The reconciliation audit over every server: what it would change (dry run)."""
    result = manage(cluster, "volume_attachment", "cleanup", "--all-servers", "--dry-run",
                    "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)
