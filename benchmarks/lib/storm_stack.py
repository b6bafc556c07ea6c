"""The attach-storm deployment: everything as separate processes on this machine.

A fresh PostgreSQL database for volumesvc, two RabbitMQ vhosts of its own, a
real Cinder 29 (MariaDB database, file driver, 1 API worker) and a Glance 33
(one tiny raw image to boot from), then volumesvc-api (gunicorn, N sync
workers), one volumesvc-conductor and one volumesvc-compute on
``tests.fixtures.virt:SlowReserveDriver`` (the fake libvirt driver, ``delay``
seconds per device-name reservation), the slow host the tests use too.

:class:`Stack` records an undo step for everything it creates, so
:meth:`Stack.stop` (called from a ``finally``, also on Ctrl-C/SIGTERM)
removes processes, databases, vhosts and the state directory in reverse
order, each step bounded in time.
"""

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import sqlalchemy as sa

from benchmarks.lib.allinone import (
    CinderHarness,
    GlanceHarness,
    ProcessGroup,
    free_port,
    priority,
    rabbit,
    system,
    wait_for,
)
from benchmarks.lib.allinone import config as aio_config
from tests.fixtures import database as db_fixtures
from tests.fixtures import virt as virt_fixtures

START_TIMEOUT = 240.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "storm-compute"
#: The compute's driver: the slow host of the tests (a package.module:Class path,
#: importable from the repository root on the compute's PYTHONPATH).
SLOW_DRIVER = f"{virt_fixtures.__name__}:{virt_fixtures.SlowReserveDriver.__name__}"
#: The gunicorn app of ``--api-preload`` (also importable from the repository root).
PRELOAD_APP = "benchmarks.lib.storm_preload_app:application"


class _Cinder(CinderHarness):
    """CinderHarness with a bounded SQL pool per process.

    MariaDB here allows 151 connections and is shared with other users. NOTE:
    this cap did not stop cinder-scheduler from holding ~144 connections
    during a burst of concurrent volume creates (seen with ``ss -tnp``), so
    ``create_volumes`` creates them one at a time; the cap stays as a bound
    for the storm itself.
    """

    def config_text(self):
        return super().config_text().replace(
            f"connection = {self.database_connection}\n",
            f"connection = {self.database_connection}\nmax_pool_size = 5\n"
            "max_overflow = 5\n", 1)


def _venv_bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


class Stack:
    def __init__(self, *, delay, api_workers, log=print, keep_state=False, api_preload=False,
                 api_threads=1, cpu_priority=True, api_options=None, metrics=False):
        # As the all-in-one does (allinone.priority): everything but the
        # API at a lower CPU priority; False runs all at the same one.
        self.cpu_priority = cpu_priority
        # Extra server options (name -> value) over the product's defaults,
        # e.g. {"max_requests": 0} to measure without worker recycling.
        # NOTE: written under [api], the deprecated names of [wsgi]'s
        # options, which both volumesvc before [wsgi] (an old --ref) and
        # after read.
        self.api_options = dict(api_options or {})
        # Options ({section: {option: value}}) laid over the stack's own in
        # volumesvc.conf, by variants of the stack (control_plane.py).
        self.config_overrides = {}
        self.api_preload = api_preload
        self.api_threads = api_threads
        self.delay = delay
        self.api_workers = api_workers
        self.log = log
        self.keep_state = keep_state
        self.tag = uuid.uuid4().hex[:8]
        self.state_dir = tempfile.mkdtemp(prefix=f"volumesvc-storm-{self.tag}-",
                                          dir="/var/tmp")
        self._undo = []  # (description, callable), run in reverse
        self._lock = threading.Lock()
        self.api_port = free_port()
        self.api_url = f"http://127.0.0.1:{self.api_port}/v2.1"
        # [metrics] enabled (doc/source/admin/monitoring.rst): the scrape URL of each
        # of our processes, or {} (off, as the product's default).
        self.metrics_urls = {} if not metrics else {
            "api": f"http://127.0.0.1:{self.api_port}/metrics",
            "conductor": f"http://127.0.0.1:{free_port()}/metrics",
            "compute": f"http://127.0.0.1:{free_port()}/metrics"}
        self.services = {}  # name -> ProcessGroup (api, conductor, compute)
        self.cinder = None
        self.glance = None
        self.image_id = None
        self.conf_path = None
        self.commit = None
        self.env = None  # volumesvc's processes run a snapshot of the commit, see _snapshot

    # -- bookkeeping ------------------------------------------------------------------------
    def _on_stop(self, what, func, *args):
        with self._lock:
            self._undo.append((what, func, args))

    def stop(self):
        """Undo everything in reverse order; each failure is reported, not raised."""
        with self._lock:
            steps, self._undo = list(reversed(self._undo)), []
        for what, func, args in steps:
            try:
                func(*args)
            except Exception as exc:  # noqa: BLE001 - clean the rest regardless
                self.log(f"cleanup: {what} failed: {exc}")
        if not self.keep_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    # -- pieces -----------------------------------------------------------------------------
    def _vhost(self, name):
        url = rabbit.ensure_vhost(name)
        self._on_stop(f"delete vhost {name}", rabbit.delete_vhost, name)
        return url

    def _postgres(self):
        ctx = db_fixtures.provisioned_url("postgresql")
        url = ctx.__enter__()
        self._on_stop("drop PostgreSQL database", ctx.__exit__, None, None, None)
        return url

    def _mariadb(self, name):
        url = system.mariadb_database(name)
        self._on_stop(f"drop MariaDB database {name}", _drop_mariadb, name)
        return url

    def _snapshot(self, ref):
        """Export ``volumesvc/`` at ``ref`` and set the environment of every child.

        Others commit to this tree while a run lasts, and the API imports
        some modules lazily: without a snapshot an API worker can run newer
        code than the conductor started a minute earlier.
        """
        self.commit = subprocess.run(["git", "-C", REPO, "rev-parse", ref], check=True,
                                     capture_output=True, text=True).stdout.strip()
        src = os.path.join(self.state_dir, "src")
        os.makedirs(src, exist_ok=True)
        archive = subprocess.run(["git", "-C", REPO, "archive", self.commit, "volumesvc"],
                                 check=True, capture_output=True, timeout=120).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True, timeout=120)
        self.env = child_env(src, self.delay)

    def _spawn(self, name, argv, env=None):
        log_path = os.path.join(self.state_dir, "logs", f"{name}.log")
        proc = ProcessGroup(name, argv, log_path, env=env or self.env,
                            nice=priority.nice_for(name, self.cpu_priority))
        self._on_stop(f"stop {name}", proc.stop, 20.0)
        proc.start()
        return proc

    def write_config(self, transport_url, db_url, cinder_url, glance_url):
        for sub in ("logs", "locks", "instances"):
            os.makedirs(os.path.join(self.state_dir, sub), exist_ok=True)
        sections = {
            "DEFAULT": {
                "host": HOST, "state_path": self.state_dir, "transport_url": transport_url,
                "report_interval": 2, "service_down_time": 10, "compute_driver": SLOW_DRIVER,
                "debug": False,
                # A storm boots hundreds of servers on one fake host: no
                # capacity limit and no quota (an older --ref ignores these).
                "cpu_allocation_ratio": "1000.0", "ram_allocation_ratio": "1000.0"},
            "quota": {"instances": -1, "cores": -1, "ram": -1},
            "database": {"connection": db_url},
            "api": {"auth_strategy": "noauth2", "listen_host": "127.0.0.1",
                    "listen_port": self.api_port, "workers": self.api_workers,
                    "threads": self.api_threads, **self.api_options},
            "cinder": {"auth_strategy": "noauth", "endpoint_override": cinder_url},
            "glance": {"auth_strategy": "noauth", "endpoint_override": glance_url},
            "oslo_concurrency": {"lock_path": f"{self.state_dir}/locks"},
        }
        if self.metrics_urls:
            port = {name: url.split(":")[2].split("/")[0]
                    for name, url in self.metrics_urls.items()}
            sections["metrics"] = {"enabled": True, "conductor_listen_port": port["conductor"],
                                   "compute_listen_port": port["compute"]}
        return aio_config.write_config_file(
            os.path.join(self.state_dir, "volumesvc.conf"),
            aio_config.merge_config(sections, self.config_overrides))

    # -- the whole thing --------------------------------------------------------------------
    def start(self, ref="HEAD"):
        self._snapshot(ref)
        rabbit.ensure_rabbit()
        system.ensure_mariadb()
        self.log(f"state dir {self.state_dir}")
        vs_transport = self._vhost(f"volumesvc-storm-{self.tag}")
        cinder_transport = self._vhost(f"cinder-storm-{self.tag}")
        db_url = self._postgres()
        cinder_db = self._mariadb(f"cinder_storm_{self.tag}")

        self.glance = GlanceHarness(os.path.join(self.state_dir, "glance"), port=free_port())
        self.glance.install()
        self.glance.configure()
        self.glance.background_priority = self.cpu_priority
        self._on_stop("stop Glance", self.glance.stop)
        self.glance.start()
        self.cinder = _Cinder(
            os.path.join(self.state_dir, "cinder"), port=free_port(),
            transport_url=cinder_transport, database_connection=cinder_db,
            nova_endpoint=self.api_url, glance_url=self.glance.url,
            host=f"storm-cinder-{self.tag}")
        self.cinder.install()
        self.cinder.configure()
        self.cinder.background_priority = self.cpu_priority
        self._on_stop("stop Cinder", self.cinder.stop)
        self.cinder.start()

        self.conf_path = self.write_config(vs_transport, db_url, self.cinder.url,
                                           self.glance.url)
        subprocess.run([_venv_bin("volumesvc-manage"), "--config-file", self.conf_path,
                        "db", "sync"], check=True, stdout=subprocess.DEVNULL, timeout=300,
                       env=self.env)
        for name in ("conductor", "compute", "api"):
            binary = f"volumesvc-{name}"
            if name == "api" and self.api_preload:
                self.services[name] = self._spawn(binary, *self._preload_argv())
                continue
            self.services[name] = self._spawn(
                binary, [_venv_bin(binary), "--config-file", self.conf_path])
        children = list(self.services.values())
        self.glance.wait_ready(START_TIMEOUT)
        self.cinder.wait_ready(START_TIMEOUT)
        wait_for(lambda: _http_ok(self.api_url), START_TIMEOUT, what="volumesvc-api",
                 children=children)
        wait_for(lambda: aio_config.compute_is_up(self.conf_path, HOST), START_TIMEOUT,
                 what="the compute service to report up", children=children)
        self.image_id = aio_config.ensure_image(self.glance.url, self.state_dir)
        return self

    def _preload_argv(self):
        """Experiments: gunicorn --preload on ``PRELOAD_APP``, and/or gthread workers.

        Same worker count; ``api_threads > 1`` gives each worker that many
        threads (``--worker-class gthread``) instead of one sync request.
        """
        env = dict(self.env, VOLUMESVC_CONFIG_FILE=self.conf_path)
        argv = [_venv_bin("gunicorn"), "--workers", str(self.api_workers),
                "--bind", f"127.0.0.1:{self.api_port}", "--name", "volumesvc-api"]
        if self.api_threads > 1:
            argv += ["--worker-class", "gthread", "--threads", str(self.api_threads)]
        else:
            argv += ["--worker-class", "sync"]
        if self.api_preload:
            argv += ["--preload", PRELOAD_APP]
        else:
            argv += ["volumesvc.serving.app:init_application()"]
        return argv, env

    def check_alive(self):
        for proc in list(self.services.values()) + (self.cinder.processes if self.cinder
                                                    else []):
            if not proc.running():
                raise RuntimeError(f"{proc.name} exited:\n{proc.tail()}")

    def our_groups(self):
        return {name: proc.pid for name, proc in self.services.items()}

    def cinder_groups(self):
        return {proc.name: proc.pid for proc in self.cinder.processes}

    @property
    def cinder_api_log(self):
        return os.path.join(self.cinder.log_dir, "cinder-api.log")


def child_env(src, delay):
    """The environment of volumesvc's processes: the snapshot first, then the repository.

    ``src`` holds ``volumesvc`` at the commit measured; the repository root
    after it provides what the harness runs inside those processes (the slow
    driver from ``tests.fixtures``, the preload app from ``benchmarks``)
    while its own ``volumesvc`` stays shadowed by the snapshot. The parent's
    PYTHONPATH is not passed on, so the children import nothing else.
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, REPO]))
    env[virt_fixtures.RESERVE_DELAY_ENV] = str(delay)
    return env


def _http_ok(url):
    import urllib.request

    with contextlib.suppress(OSError):
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status == 200
    return False


def _drop_mariadb(name):
    engine = sa.create_engine(system.MARIADB_ADMIN_URL + "/", isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
    finally:
        engine.dispose()


def wait_until(predicate, timeout, interval=0.5):
    """Poll ``predicate`` at most ``timeout`` seconds; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
