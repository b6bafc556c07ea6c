"""Run a real Glance 33 on this machine (image-backed boot, createImage).

Same shape as ``volumesvc_aio.cinder``: its own cached virtualenv, a config
without keystone (the unauthenticated paste pipeline plus a policy file that
lets such callers act as admin/service, else public images are a 403), a
file store under state_dir, served by gunicorn (Glance 33 has no standalone
server). Traps: ``doc/source/contributor/dependencies.rst`` ("Glance"); Glance reads its
config from ``$OS_GLANCE_CONFIG_DIR/glance-api.conf``.

Point Cinder at it with ``CinderHarness(..., glance_url=glance.url)``.
"""

import os
import shutil
import sys

from volumesvc_aio import (
    ServiceHarness,
    files,
    frozen_requirements,
    http_json,
    single_process_main,
)

GLANCE_VERSION = "33.0.0"
# Glance, its client, gunicorn, PyMySQL and psycopg2, with every dependency
# pinned as installed once (upstream leaves them unpinned).
REQUIREMENTS = frozen_requirements(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "glance-constraints.txt"))
POLICY = '"context_is_admin": ""\n"service_api": ""\n'


class GlanceHarness(ServiceHarness):
    """A real Glance API (no keystone unless given one, file store) under gunicorn.

    :param state_dir: config, SQLite DB, images, staging, logs.
    :param port: API port on 127.0.0.1 (Glance's usual is 9292).
    :param database_connection: SQLAlchemy URL; default SQLite in state_dir.
    :param deps_dir: virtualenv cache (``$VOLUMESVC_DEPS_DIR`` or ``~/.cache/volumesvc``).
    :param keystone: a started KeystoneHarness: validate tokens (user ``glance``)
        with Glance's default policy instead of the open noauth set-up.
    :param ceph: a started ``volumesvc_aio.ceph.CephHarness``: the default
        store is RBD (pool ``images`` as ``client.glance``) and image GETs
        show ``direct_url``, which is what lets Cinder's RBD driver clone a
        volume from an image instead of copying it.
    """

    LABEL = "Glance"
    VERSION = GLANCE_VERSION
    REQUIREMENTS = REQUIREMENTS
    DB_SYNC = ("db_sync",)
    READY_TIMEOUT = 60.0

    def __init__(self, state_dir, *, port=9292, database_connection=None, deps_dir=None,
                 keystone=None, ceph=None):
        super().__init__(state_dir, port, deps_dir)
        self.keystone = keystone
        self.ceph = ceph
        self.database_connection = (database_connection or
                                    f"sqlite:///{self.state_dir}/glance.sqlite")
        self.config_dir = os.path.join(self.state_dir, "etc")
        self.config_file = os.path.join(self.config_dir, "glance-api.conf")

    @property
    def url(self):
        """What clients and Cinder's ``glance_api_servers`` use."""
        return f"http://127.0.0.1:{self.port}"

    def config_text(self):
        """glance-api.conf: noauth with an open policy, or keystone with the default policy."""
        keystone = self.keystone is not None
        lines = [
            "[DEFAULT]",
            f"node_staging_uri = file://{self.state_dir}/staging",
            "bind_host = 127.0.0.1",
            f"bind_port = {self.port}",
            "debug = true",
            "use_stderr = true",
            *(["enabled_backends = ceph:rbd", "show_image_direct_url = true"]
              if self.ceph is not None else []),
            "", "[database]", f"connection = {self.database_connection}",
            "", "[paste_deploy]",
            # empty: the unauthenticated-context pipeline
            "flavor = keystone" if keystone else "flavor =",
            f"config_file = {self.config_dir}/glance-api-paste.ini",
            *(self._rbd_store() if self.ceph is not None else self._file_store()),
            "", "[oslo_concurrency]", f"lock_path = {self.state_dir}/lock",
            "",
        ]
        if keystone:
            lines += self.keystone.authtoken_section("glance",
                                                     service_token_roles_required=False)
        else:
            lines += ["[oslo_policy]", f"policy_file = {self.config_dir}/policy.yaml", ""]
        return "\n".join(lines)

    def _file_store(self):
        return ["", "[glance_store]",
                "stores = file",
                "default_store = file",
                f"filesystem_store_datadir = {self.state_dir}/images/"]

    def _rbd_store(self):
        """Glance's multi-store form with one store, ``ceph``; staging stays on files."""
        return ["", "[glance_store]",
                "default_backend = ceph",
                "", "[ceph]",
                "rbd_store_pool = images",
                "rbd_store_user = glance",
                f"rbd_store_ceph_conf = {self.ceph.conf_path}",
                "rbd_store_chunk_size = 8",
                "", "[os_glance_staging_store]",
                f"filesystem_store_datadir = {self.state_dir}/staging",
                "", "[os_glance_tasks_store]",
                f"filesystem_store_datadir = {self.state_dir}/tasks"]

    def install(self) -> bool:
        installed = super().install()
        if self.ceph is not None:
            # glance_store's rbd driver imports rados/rbd: Debian's, into this venv only.
            from volumesvc_aio import ceph as ceph_mod

            ceph_mod.expose_ceph_modules(self.venv)
        return installed

    def _auth_headers(self):
        return {"X-Auth-Token": self.keystone.token()} if self.keystone is not None else {}

    def configure(self):
        for d in ("etc", "images", "staging", "tasks", "lock", "log"):
            os.makedirs(os.path.join(self.state_dir, d), exist_ok=True)
        shutil.copyfile(os.path.join(self.venv, "etc", "glance", "glance-api-paste.ini"),
                        os.path.join(self.config_dir, "glance-api-paste.ini"))
        # NOTE: the open policy only without keystone; oslo.policy finds a
        # policy.yaml in the config dir by itself, so a keystone start in a
        # state dir that ran without keystone must remove it.
        policy_path = os.path.join(self.config_dir, "policy.yaml")
        if self.keystone is None:
            with open(policy_path, "w") as f:
                f.write(POLICY)
        elif os.path.exists(policy_path):
            os.remove(policy_path)
        files.write_private(self.config_file, self.config_text())

    def _env(self):
        env = super()._env()
        env["OS_GLANCE_CONFIG_DIR"] = self.config_dir
        return env

    def _commands(self):
        """Glance 33 has no standalone server: glance-api is gunicorn on the WSGI app.

        Two sync workers, not one: a client that copies an image by streaming
        its download into an upload (tempest's image-property tests do) holds
        one worker on each side; with a single worker the upload waited on a
        download that could not be served, every other Glance call (a boot's
        image lookup) waited behind them, and all failed at 60 s once the
        starter image (a real guest, 20 MB) outgrew the socket buffers.
        """
        return [("glance-api",
                 [self._bin("gunicorn"), "--bind", f"127.0.0.1:{self.port}", "--workers", "2",
                  "--timeout", "600", "glance.wsgi.api:application"])]

    def _ready(self):
        self._check_alive()
        status, _ = http_json(self.url + "/v2/images", headers={
            "Accept": "application/json", **self._auth_headers()})
        return status == 200

    def _logs(self):
        """Only one process: its log tail without a header."""
        return "".join(p.tail() for p in self.processes)


def main(argv=None):
    return single_process_main(
        GlanceHarness, "glance", "Install, configure and run a real Glance 33 (no keystone, "
        "file store) in the foreground until interrupted.", argv)


if __name__ == "__main__":
    sys.exit(main())
