"""Run a real Barbican 23 on this machine (the all-in-one's key manager).

Why: Cinder keeps the key of every encrypted volume in a key manager and
the compute reads it back to open the volume; without one Cinder refuses
to create an encrypted volume at all. Same shape as the Keystone and
Glance harnesses: its own cached virtualenv pinned by
``barbican-constraints.txt``, its own SQLite database, served by gunicorn
on loopback. Secrets are stored by the ``simple_crypto`` plugin under a
key-encryption key made once per state dir (a 0600 file, never a fixed
string). With a Keystone it validates tokens as user ``barbican``; without
one it runs Barbican's unauthenticated pipeline behind our small filter
(``plugins/volumesvc_barbican_plugins``) that reads the caller's project
from the noauth ``user:project`` token, as Cinder's and our own noauth do.

Traps: Barbican loads its paste file from a fixed ``/etc`` path, so the
WSGI shim written into the state dir loads ours. Its config is parsed
many times over, at import, by each plugin module for itself, and by
``barbican-manage db upgrade`` with only the default search path (a
``--config-file`` does not reach them): the processes run with ``HOME``
set to the state dir, where oslo.config's search (``~/barbican.conf``)
finds our file.
"""

import base64
import os
import secrets
import sys

from volumesvc_aio import (
    ServiceHarness,
    files,
    frozen_requirements,
    http_json,
    single_process_main,
)

BARBICAN_VERSION = "23.0.0"
# Barbican and gunicorn with every dependency pinned as installed once
# (upstream leaves them unpinned).
REQUIREMENTS = frozen_requirements(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "barbican-constraints.txt"))
PLUGINS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
# The service type Cinder, castellan and clients look Barbican up by.
SERVICE_TYPE = "key-manager"

_WSGI_SHIM = '''"""Barbican's WSGI app on our paste file (written by volumesvc_aio.barbican).

Barbican's own entry point loads its paste file from /etc.
"""
from paste import deploy

application = deploy.loadapp("config:" + {paste_file!r})
'''


class BarbicanHarness(ServiceHarness):
    """A real Barbican API (simple_crypto, SQLite) under gunicorn.

    :param state_dir: config, key-encryption key, SQLite DB, logs.
    :param port: API port on 127.0.0.1 (Barbican's usual is 9311).
    :param database_connection: SQLAlchemy URL; default SQLite in state_dir.
    :param deps_dir: virtualenv cache (``$VOLUMESVC_DEPS_DIR`` or ``~/.cache/volumesvc``).
    :param keystone: a started KeystoneHarness: validate tokens (user
        ``barbican``) with Barbican's default policy; else the noauth pipeline.
    """

    LABEL = "Barbican"
    VERSION = BARBICAN_VERSION
    REQUIREMENTS = REQUIREMENTS
    DB_SYNC = ("db", "upgrade")
    READY_TIMEOUT = 60.0

    def __init__(self, state_dir, *, port=9311, database_connection=None, deps_dir=None,
                 keystone=None):
        super().__init__(state_dir, port, deps_dir)
        self.keystone = keystone
        self.database_connection = (database_connection or
                                    f"sqlite:///{self.state_dir}/barbican.sqlite")
        self.config_file = os.path.join(self.state_dir, "barbican.conf")
        self.paste_file = os.path.join(self.state_dir, "barbican-api-paste.ini")

    @property
    def url(self):
        """The endpoint castellan's ``[barbican] barbican_endpoint`` and the catalog name."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def kek(self):
        """simple_crypto's key-encryption key: 32 random bytes, base64, made once per state dir.

        Kept in its own 0600 file so that a restart on the same state dir
        can still decrypt what it stored before.
        """
        path = os.path.join(self.state_dir, "simple_crypto_kek")
        if not os.path.exists(path):
            os.makedirs(self.state_dir, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(base64.b64encode(secrets.token_bytes(32)).decode("ascii"))
        with open(path) as f:
            return f.read().strip()

    def config_text(self):
        lines = [
            "[DEFAULT]",
            f"host_href = {self.url}",
            "debug = false",
            "use_stderr = true",
            "db_auto_create = false",
            "", "[database]", f"connection = {self.database_connection}",
            "", "[secretstore]", "enabled_secretstore_plugins = store_crypto",
            "", "[crypto]", "enabled_crypto_plugins = simple_crypto",
            "", "[simple_crypto_plugin]", f"kek = {self.kek}",
            "",
        ]
        if self.keystone is not None:
            lines += self.keystone.authtoken_section("barbican",
                                                     service_token_roles_required=False)
        return "\n".join(lines)

    def paste_text(self, upstream):
        """Barbican's paste file with ``/v1`` on the keystone pipeline or our noauth one."""
        if self.keystone is not None:
            return upstream
        text = upstream.replace("/v1: barbican-api-keystone", "/v1: barbican_api")
        text = text.replace(" unauthenticated-context ",
                            " volumesvc_noauth unauthenticated-context ")
        return text + ("\n[filter:volumesvc_noauth]\n"
                       "paste.filter_factory = volumesvc_barbican_plugins.noauth:"
                       "filter_factory\n")

    def configure(self):
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.venv, "etc", "barbican", "barbican-api-paste.ini")) as f:
            upstream = f.read()
        with open(self.paste_file, "w") as f:
            f.write(self.paste_text(upstream))
        with open(os.path.join(self.state_dir, "volumesvc_barbican_wsgi.py"), "w") as f:
            f.write(_WSGI_SHIM.format(paste_file=self.paste_file))
        files.write_private(self.config_file, self.config_text())

    def _env(self):
        env = super()._env()
        # oslo.config's default search finds <state dir>/barbican.conf (the docstring's trap).
        env["HOME"] = self.state_dir
        env["PYTHONPATH"] = PLUGINS_DIR + (os.pathsep + env["PYTHONPATH"]
                                           if env.get("PYTHONPATH") else "")
        return env

    def _commands(self):
        # NOTE: one worker: SQLite, and a handful of keys per test run.
        # --no-control-socket: gunicorn >= 25 shares one per-user socket.
        return [("barbican-api", [self._bin("gunicorn"), "--bind", f"127.0.0.1:{self.port}",
                                  "--workers", "1", "--timeout", "120",
                                  "--no-control-socket", "--pythonpath", self.state_dir,
                                  "volumesvc_barbican_wsgi:application"])]

    def _ready(self):
        """The versions document answers once the worker built the whole app."""
        self._check_alive()
        status, _ = http_json(self.url + "/", headers={"Accept": "application/json"})
        return status in (200, 300)

    def _logs(self):
        return "".join(p.tail() for p in self.processes)


def main(argv=None):
    return single_process_main(
        BarbicanHarness, "barbican", "Install, configure and run a real Barbican 23 (no "
        "keystone, simple_crypto) in the foreground until interrupted.", argv)


if __name__ == "__main__":
    sys.exit(main())
