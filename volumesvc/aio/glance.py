"""Run a real Glance 33 on this machine (image-backed boot, createImage).

Same shape as ``volumesvc.aio.cinder``: its own cached virtualenv, a config
without keystone (the unauthenticated paste pipeline plus a policy file that
lets such callers act as admin/service, else public images are a 403), a
file store under state_dir, served by gunicorn (Glance 33 has no standalone
server). Traps are in ``docs/real-glance.md``; notably Glance reads its
config from ``$OS_GLANCE_CONFIG_DIR/glance-api.conf``.

Point Cinder at it with ``CinderHarness(..., glance_url=glance.url)``.
"""

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time

from volumesvc.aio import ProcessGroup, free_port, http_json, install_venv, wait_for
from volumesvc.aio import deps_dir as _deps_dir

GLANCE_VERSION = "33.0.0"
REQUIREMENTS = [f"glance=={GLANCE_VERSION}", "python-glanceclient", "gunicorn",
                "PyMySQL", "psycopg2-binary"]
POLICY = '"context_is_admin": ""\n"service_api": ""\n'


class GlanceHarness:
    """A real Glance API (no keystone, file store) under gunicorn.

    :param state_dir: config, SQLite DB, images, staging, logs.
    :param port: API port on 127.0.0.1 (Glance's usual is 9292).
    :param database_connection: SQLAlchemy URL; default SQLite in state_dir.
    :param deps_dir: virtualenv cache (``$VOLUMESVC_DEPS_DIR`` or ``~/.cache/volumesvc``).
    """

    def __init__(self, state_dir, *, port=9292, database_connection=None, deps_dir=None):
        self.state_dir = os.path.abspath(state_dir)
        self.port = int(port)
        self.database_connection = (database_connection or
                                    f"sqlite:///{self.state_dir}/glance.sqlite")
        self.venv = os.path.join(_deps_dir(deps_dir), f"glance-{GLANCE_VERSION}")
        self.config_dir = os.path.join(self.state_dir, "etc")
        self.config_file = os.path.join(self.config_dir, "glance-api.conf")
        self.log_dir = os.path.join(self.state_dir, "log")
        self.process = None

    @property
    def url(self):
        """What clients and Cinder's ``glance_api_servers`` use."""
        return f"http://127.0.0.1:{self.port}"

    def _bin(self, name):
        return os.path.join(self.venv, "bin", name)

    def install(self) -> bool:
        os.makedirs(self.log_dir, exist_ok=True)
        try:
            return install_venv(self.venv, REQUIREMENTS,
                                log=os.path.join(self.log_dir, "install.log"))
        except (RuntimeError, OSError) as e:
            raise RuntimeError(f"Cannot install Glance {GLANCE_VERSION}: {e}") from e

    def config_text(self):
        return "\n".join([
            "[DEFAULT]",
            f"node_staging_uri = file://{self.state_dir}/staging",
            "bind_host = 127.0.0.1",
            f"bind_port = {self.port}",
            "debug = true",
            "use_stderr = true",
            "", "[database]", f"connection = {self.database_connection}",
            "", "[paste_deploy]",
            "flavor =",  # empty: the unauthenticated-context pipeline
            f"config_file = {self.config_dir}/glance-api-paste.ini",
            "", "[glance_store]",
            "stores = file",
            "default_store = file",
            f"filesystem_store_datadir = {self.state_dir}/images/",
            "", "[oslo_policy]", f"policy_file = {self.config_dir}/policy.yaml",
            "", "[oslo_concurrency]", f"lock_path = {self.state_dir}/lock",
            "",
        ])

    def configure(self):
        for d in ("etc", "images", "staging", "lock", "log"):
            os.makedirs(os.path.join(self.state_dir, d), exist_ok=True)
        shutil.copyfile(os.path.join(self.venv, "etc", "glance", "glance-api-paste.ini"),
                        os.path.join(self.config_dir, "glance-api-paste.ini"))
        with open(os.path.join(self.config_dir, "policy.yaml"), "w") as f:
            f.write(POLICY)
        with open(self.config_file, "w") as f:
            f.write(self.config_text())

    def _env(self):
        env = dict(os.environ)
        env["OS_GLANCE_CONFIG_DIR"] = self.config_dir
        env["PATH"] = os.path.join(self.venv, "bin") + os.pathsep + env.get("PATH", "")
        env.pop("VIRTUAL_ENV", None)
        return env

    def start(self):
        if self.process:
            raise RuntimeError("Glance harness already started")
        if not os.path.exists(self.config_file):
            self.configure()
        result = subprocess.run([self._bin("glance-manage"), "--config-file", self.config_file,
                                 "db_sync"], env=self._env(), capture_output=True, text=True,
                                timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"glance-manage db_sync failed:\n{result.stderr[-3000:]}")
        self.process = ProcessGroup(
            "glance-api",
            [self._bin("gunicorn"), "--bind", f"127.0.0.1:{self.port}", "--workers", "1",
             "--timeout", "600", "glance.wsgi.api:application"],
            os.path.join(self.log_dir, "glance-api.log"), env=self._env(),
            cwd=self.state_dir).start()

    def _ready(self):
        if not self.process.running():
            raise RuntimeError(f"glance-api exited early:\n{self.process.tail()}")
        status, _ = http_json(self.url + "/v2/images", headers={"Accept": "application/json"})
        return status == 200

    def wait_ready(self, timeout=60.0):
        wait_for(self._ready, timeout, what=f"Glance on port {self.port}",
                 on_fail=lambda: self.process.tail() if self.process else "")
        return self

    def stop(self):
        if self.process:
            self.process.stop()
            self.process = None

    def clean(self):
        self.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def setup(self, timeout=60.0):
        self.install()
        self.configure()
        try:
            self.start()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self):
        return self.setup()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m volumesvc.aio.glance",
        description="Install, configure and run a real Glance 33 (no keystone, file store) "
                    "in the foreground until interrupted.")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--database-connection")
    parser.add_argument("--deps-dir")
    parser.add_argument("--install-only", action="store_true")
    parser.add_argument("--clean", action="store_true", help="wipe state-dir first")
    args = parser.parse_args(argv)
    harness = GlanceHarness(args.state_dir, port=args.port or free_port(),
                            database_connection=args.database_connection,
                            deps_dir=args.deps_dir)
    if args.clean:
        harness.clean()
    started = time.monotonic()
    harness.install()
    print(f"installed in {harness.venv} ({time.monotonic() - started:.1f}s)", flush=True)
    if args.install_only:
        return 0
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    started = time.monotonic()
    with harness:
        print(f"Glance ready at {harness.url} in {time.monotonic() - started:.1f}s "
              f"(logs in {harness.log_dir}); Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while harness.process and harness.process.running():
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
