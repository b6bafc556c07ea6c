"""Fixtures shared by the integration tier: real RabbitMQ, databases, ports.

Integration tests run everything as separate processes against the
machine's real services. They never skip: a missing service is a failure
with a message saying what to start.
"""

import json
import os
import subprocess
import sys
import textwrap
import urllib.request
import uuid

import pytest

from tests.integration.fixtures_openstack import (  # noqa: F401 - fixtures
    cinder_api,
    cinder_conf,
    cinder_ctx,
    cinder_harness,
    glance_harness,
)
from tests.integration.fixtures_storage import (  # noqa: F401 - fixtures
    ceph_cluster,
    system_libvirt,
)
from volumesvc import binaries
from volumesvc_aio import (
    free_port,  # noqa: F401 - the tests import it from here
    rabbit,
    stop_all,
)

BIN = os.path.dirname(sys.executable)
# The repository root: on the services' PYTHONPATH so that a test can name a
# driver double from tests/fixtures in ``compute_driver``.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_ADMIN_URL = os.environ.get("VOLUMESVC_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432")
MYSQL_ADMIN_URL = os.environ.get("VOLUMESVC_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")


def pytest_collection_modifyitems(items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.integration)
    # Once a process has opened the embedded QEMU driver (``qemu_host``),
    # libvirt refuses every other connection in it, ``qemu:///system``
    # included ("Missing URI parameter 'root'"): the modules that open the
    # embedded driver run last, whole and in their order, after every module
    # that talks to libvirtd from this process.
    embedded = {getattr(item, "module", None) for item in items
                if "qemu_host" in getattr(item, "fixturenames", ())}
    embedded.discard(None)
    items.sort(key=lambda item: getattr(item, "module", None) in embedded)


def bin_path(name):
    return os.path.join(BIN, name)


@pytest.fixture
def rabbit_vhost():
    """A RabbitMQ virtual host of this test's own; yields its transport URL."""
    name = f"vs-test-{uuid.uuid4().hex[:8]}"
    url = rabbit.ensure_vhost(name)
    yield url
    subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, check=False)


def _server_database(admin_url, scheme_db_suffix=""):
    import sqlalchemy as sa

    name = f"vs_it_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(admin_url + "/" + scheme_db_suffix, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"cannot create a database at {admin_url}: {exc}")
    return engine, name


@pytest.fixture
def pg_database_url():
    """A fresh PostgreSQL database on 127.0.0.1:5432, dropped afterwards."""
    import sqlalchemy as sa

    engine, name = _server_database(PG_ADMIN_URL, "postgres")
    yield f"{PG_ADMIN_URL}/{name}"
    with engine.connect() as conn:
        conn.execute(sa.text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
            {"n": name})
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
    engine.dispose()


class Deployment:
    """volumesvc api, conductor and compute as separate processes (one config file).

    Each process can be killed and started again (``spawn``), which the
    all-in-one does not allow; that is what resilience tests need.
    """

    def __init__(self, tmp_path, conf_path, port, env=None):
        self.tmp_path = tmp_path
        self.conf = str(conf_path)
        self.api = f"http://127.0.0.1:{port}"
        self.children = {}
        path = os.environ.get("PYTHONPATH")
        self.env = {**os.environ, **(env or {}),
                    "PYTHONPATH": REPO + (os.pathsep + path if path else "")}

    def spawn(self, binary):
        import volumesvc_aio as harness

        child = harness.ProcessGroup(binary, [bin_path(binary), "--config-file", self.conf],
                                     log_path=str(self.tmp_path / f"{binary}.log"),
                                     env=self.env).start()
        self.children[binary] = child
        if binary == binaries.API:
            # NOTE: a test's first request may not race gunicorn's bind: on a
            # loaded machine the compute reports 'up' before the API listens
            # (seen as 'Connection refused' on the first boot in a CI run).
            harness.wait_for(self._api_answers, 120, what="volumesvc-api listening",
                             children=[child])
        return child

    def _api_answers(self):
        """True once the API answers HTTP at all (any status: it is serving)."""
        try:
            with urllib.request.urlopen(f"{self.api}/", timeout=10):
                return True
        except urllib.error.HTTPError:
            return True

    def stop(self, binary, sig=15):
        child = self.children[binary]
        child.signal(sig)
        child.proc.wait(30)

    def services(self):
        out = subprocess.run(
            [bin_path("volumesvc-manage"), "--config-file", self.conf, "service", "list",
             "--json"], check=True, capture_output=True, text=True, timeout=60).stdout
        return {row["binary"]: row for row in json.loads(out)}

    def compute_state(self):
        return self.services().get("volumesvc-compute", {}).get("state")

    def request(self, method, path, body=None, *, version="2.1", token="admin:admin"):
        """(status, parsed body or None) of one API request."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.api}/v2.1{path}", data=data, method=method,
            headers={"X-Auth-Token": token, "OpenStack-API-Version": f"compute {version}",
                     "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    def logs(self, lines=30):
        return "\n".join(f"--- {name}\n{child.tail(lines)}"
                         for name, child in self.children.items())


@pytest.fixture
def make_deployment(tmp_path, rabbit_vhost, pg_database_url):
    """Factory: ``make_deployment(extra_ini="")`` writes the config, syncs, starts all three.

    ``compute_driver`` and ``env`` (extra environment of the processes) let a
    test run a driver double such as ``tests.fixtures.virt:SlowReserveDriver``.
    """
    made = []

    def make(extra_ini="", start=("volumesvc-conductor", "volumesvc-compute",
                                   "volumesvc-api"), compute_driver="fake", env=None):
        port = free_port()
        conf_path = tmp_path / "volumesvc.conf"
        conf_path.write_text(textwrap.dedent(f"""\
            [DEFAULT]
            host = it-compute-1
            state_path = {tmp_path}
            transport_url = {rabbit_vhost}
            report_interval = 1
            service_down_time = 8
            compute_driver = {compute_driver}
            graceful_shutdown_timeout = 5
            [database]
            connection = {pg_database_url}
            [api]
            auth_strategy = noauth2
            listen_host = 127.0.0.1
            listen_port = {port}
            workers = 2
            """) + textwrap.dedent(extra_ini))
        subprocess.run([bin_path("volumesvc-manage"), "--config-file", str(conf_path),
                        "db", "sync"], check=True, capture_output=True, timeout=120)
        deployment = Deployment(tmp_path, conf_path, port, env=env)
        for binary in start:
            deployment.spawn(binary)
        made.append(deployment)
        return deployment

    yield make
    # NOTE: all at once: one after another, each waited for its graceful stop
    # (and a compute stopped after its conductor waited on calls to it).
    stop_all([c.stop for d in made for c in d.children.values()])


class QemuHost:
    """A LibvirtDriver on ``qemu:///embed`` with its own state directory."""

    def __init__(self, workdir, driver):
        self.workdir = workdir
        self.driver = driver


@pytest.fixture(scope="session")
def qemu_host():
    """One embedded QEMU driver for the whole test process.

    libvirt allows one embedded root per process ("Cannot open embedded
    driver at path X, already open with path Y"), and its first open probes
    QEMU for seconds; every in-process real-QEMU test shares this one.
    """
    import shutil
    import tempfile

    from volumesvc import exception, virt
    from volumesvc.conf import get_conf

    # NOTE: short path on purpose: QEMU's monitor sockets live under the
    # embedded root and UNIX socket paths are limited to 108 bytes.
    workdir = tempfile.mkdtemp(prefix="vsvc-qemu-", dir="/var/tmp")
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", workdir)
    conf.set_override("host", "it-qemu")
    conf.set_override("compute_driver", "libvirt")
    drv = virt.load_driver(conf)
    try:
        drv.init_host(conf.host)
    except exception.HypervisorUnavailable as exc:
        pytest.fail(f"libvirt is not usable here: {exc}")
    yield QemuHost(workdir, drv)
    for guest in drv.host.list_guests():
        drv.destroy({"uuid": guest.uuid})
    drv.cleanup_host()
    shutil.rmtree(workdir, ignore_errors=True)
