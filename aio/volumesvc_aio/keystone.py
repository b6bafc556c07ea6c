"""Run a real Keystone 30 on this machine (the all-in-one's identity, tempest).

Why a harness of our own: with ``noauth`` the security boundary operators
deploy (keystonemiddleware, roles, service tokens between Cinder and us,
Cinder's attachment-delete guard) never runs. This installs Keystone from
PyPI into its own cached virtualenv (pinned by ``keystone-constraints.txt``
next to this module, so a later install does not drift), bootstraps it,
serves it with gunicorn and creates the users, projects and catalog the
all-in-one needs (:meth:`KeystoneHarness.provision`). The traps it avoids
are in ``doc/source/contributor/dependencies.rst``: Keystone parses ``sys.argv`` at import
(hence the WSGI shim written into the state dir), finds its config only
through ``OS_KEYSTONE_CONFIG_FILES``, and locks SQLite under parallel load
(hence one sync worker unless a server database is given).

It also writes what the other services and the clients need to talk to it:
``[keystone_authtoken]`` and keystoneauth password sections
(:meth:`authtoken_section`, :meth:`password_section`) and ``clouds.yaml``.
"""

import grp
import json
import os
import pwd
import secrets
import subprocess
import sys
import urllib.error
import urllib.request

from volumesvc_aio import (
    ServiceHarness,
    files,
    frozen_requirements,
    http_json,
    single_process_main,
)

KEYSTONE_VERSION = "30.0.0"
# keystone, gunicorn and PyMySQL with every dependency pinned as installed
# once (upstream leaves them unpinned).
REQUIREMENTS = frozen_requirements(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "keystone-constraints.txt"))
REGION = "RegionOne"
DOMAIN = "Default"
SERVICE_PROJECT = "service"
DEMO_PROJECT = "demo"
ADMIN_USER = "admin"
# name → (project, roles): the service users get ``service`` (Cinder's
# attachment-delete guard and our own service-only policies want it) and
# ``admin`` as in devstack; demo has a member and a reader.
USERS = {
    "volumesvc": (SERVICE_PROJECT, ("service", "admin")),
    "cinder": (SERVICE_PROJECT, ("service", "admin")),
    "glance": (SERVICE_PROJECT, ("service", "admin")),
    "barbican": (SERVICE_PROJECT, ("service", "admin")),
    "demo": (DEMO_PROJECT, ("member", "reader")),
    "demo-reader": (DEMO_PROJECT, ("reader",)),
}
# clouds.yaml: cloud name → (user, project)
CLOUDS = {
    "volumesvc-aio": (ADMIN_USER, "admin"),
    "volumesvc-aio-demo": ("demo", DEMO_PROJECT),
    "volumesvc-aio-reader": ("demo-reader", DEMO_PROJECT),
}
HTTP_TIMEOUT = 30.0

_WSGI_SHIM = '''"""Keystone's WSGI app without gunicorn's argv (written by volumesvc_aio.keystone).

keystone parses sys.argv with oslo.config at import time; under gunicorn
that is gunicorn's command line and the worker exits with code 2.
"""
import sys

sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402,F401
'''


class IdentityError(RuntimeError):
    pass


class KeystoneHarness(ServiceHarness):
    """A real Keystone (identity v3, fernet tokens) under gunicorn.

    :param state_dir: config, key repositories, SQLite DB, logs, passwords.
    :param port: API port on 127.0.0.1 (Keystone's usual is 5000).
    :param database_connection: SQLAlchemy URL; default SQLite in state_dir
        with one worker (several workers lock SQLite).
    :param workers: gunicorn workers (forced to 1 on SQLite).
    """

    LABEL = "Keystone"
    VERSION = KEYSTONE_VERSION
    REQUIREMENTS = REQUIREMENTS
    DB_SYNC = ("db_sync",)
    READY_TIMEOUT = 60.0

    def __init__(self, state_dir, *, port=5000, database_connection=None, deps_dir=None,
                 workers=2):
        super().__init__(state_dir, port, deps_dir)
        self.database_connection = (database_connection or
                                    f"sqlite:///{self.state_dir}/keystone.sqlite")
        self.workers = 1 if self.database_connection.startswith("sqlite") else workers
        self.config_file = os.path.join(self.state_dir, "keystone.conf")
        self._password = None

    @property
    def url(self):
        """The identity v3 endpoint (``auth_url`` of every client)."""
        return f"http://127.0.0.1:{self.port}/v3"

    @property
    def password(self):
        """The one password of every user here, made on first use and kept in state_dir.

        A test deployment: one secret, readable only by its owner, never a
        fixed string in the repository.
        """
        if self._password is None:
            path = os.path.join(self.state_dir, "password")
            if not os.path.exists(path):
                os.makedirs(self.state_dir, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(secrets.token_urlsafe(18))
            with open(path) as f:
                self._password = f.read().strip()
        return self._password

    # -- configure -------------------------------------------------------------
    def config_text(self):
        return "\n".join([
            "[DEFAULT]",
            # Keystone would name its log after the program (gunicorn.log).
            f"log_file = {self.log_dir}/keystone.log",
            "debug = false",
            "", "[database]", f"connection = {self.database_connection}",
            "", "[fernet_tokens]", f"key_repository = {self.state_dir}/fernet-keys",
            "", "[fernet_receipts]", f"key_repository = {self.state_dir}/fernet-keys",
            "", "[credential]", f"key_repository = {self.state_dir}/credential-keys",
            # A test deployment: 0.05 s per password check instead of 0.35 s.
            "", "[identity]", "password_hash_rounds = 4",
            "",
        ])

    def configure(self):
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.state_dir, "volumesvc_keystone_wsgi.py"), "w") as f:
            f.write(_WSGI_SHIM)
        files.write_private(self.config_file, self.config_text())

    # -- run -------------------------------------------------------------------
    def _env(self):
        env = super()._env()
        env["OS_KEYSTONE_CONFIG_FILES"] = self.config_file
        return env

    def _manage(self, *args):
        result = subprocess.run([self._bin("keystone-manage"), "--config-file", self.config_file,
                                 *args], env=self._env(), capture_output=True, text=True,
                                timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"keystone-manage {args[0]} failed:\n{result.stderr[-3000:]}")

    def db_sync(self):
        """db_sync, the key repositories and bootstrap (all idempotent)."""
        super().db_sync()
        user = pwd.getpwuid(os.getuid()).pw_name
        group = grp.getgrgid(os.getgid()).gr_name
        for what in ("fernet_setup", "credential_setup"):
            self._manage(what, "--keystone-user", user, "--keystone-group", group)
        # NOTE: one argument with "=": a password that starts with "-" (one
        # in 64 of token_urlsafe's) is otherwise read as an option and the
        # start fails.
        self._manage("bootstrap", f"--bootstrap-password={self.password}",
                     "--bootstrap-admin-url", self.url, "--bootstrap-public-url", self.url,
                     "--bootstrap-internal-url", self.url, "--bootstrap-region-id", REGION)

    def _commands(self):
        # NOTE: --no-control-socket: gunicorn >= 25 shares one per-user socket.
        return [("keystone", [self._bin("gunicorn"), "--bind", f"127.0.0.1:{self.port}",
                              "--workers", str(self.workers), "--timeout", "120",
                              "--no-control-socket", "--pythonpath", self.state_dir,
                              "volumesvc_keystone_wsgi:application"])]

    def _ready(self):
        self._check_alive()
        status, _ = http_json(self.url, timeout=5.0)
        return status == 200

    def _logs(self):
        return "".join(p.tail() for p in self.processes)

    # -- identity API ------------------------------------------------------------
    def token(self, user=ADMIN_USER, project="admin"):
        """A project-scoped token of ``user`` (password auth), for scripts and tests."""
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"name": DOMAIN}, "password": self.password}}},
            "scope": {"project": {"name": project, "domain": {"name": DOMAIN}}}}}
        req = urllib.request.Request(self.url + "/auth/tokens", data=json.dumps(body).encode(),
                                     method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
                return resp.headers["X-Subject-Token"]
        except urllib.error.HTTPError as e:
            raise IdentityError(f"cannot get a token for {user} in {project}: {e.code} "
                                f"{e.read()[:300]!r}") from e

    def provision(self, catalog):
        """Create the projects, users, role assignments and catalog (idempotent).

        ``catalog`` maps a service type to ``(name, url)``; identity is
        registered by bootstrap already.
        """
        api = _IdentityAdmin(self.url, self.token())
        projects = {name: api.ensure("projects", name, {"domain_id": "default"})
                    for name in (SERVICE_PROJECT, DEMO_PROJECT)}
        projects["admin"] = api.find("projects", "admin")
        roles = {r["name"]: r["id"] for r in api.get("/roles")["roles"]}
        for user, (project, user_roles) in USERS.items():
            user_id = api.ensure("users", user, {"domain_id": "default",
                                                 "password": self.password})
            for role in user_roles:
                api.put(f"/projects/{projects[project]}/users/{user_id}/roles/{roles[role]}")
        for service_type, (name, url) in catalog.items():
            service_id = api.ensure("services", name, {"type": service_type},
                                    key=lambda s, t=service_type, n=name: (
                                        s["type"] == t and s.get("name") == n))
            have = api.get(f"/endpoints?service_id={service_id}")["endpoints"]
            for interface in ("public", "internal", "admin"):
                if not any(e["interface"] == interface and e["url"] == url for e in have):
                    api.post("/endpoints", {"endpoint": {
                        "service_id": service_id, "interface": interface, "url": url,
                        "region_id": REGION}})
        return projects

    # -- what other services and clients need --------------------------------------
    def password_section(self, group, user, *, project=SERVICE_PROJECT, extra=()):
        """A keystoneauth password plugin section (``[nova]``, ``[service_user]``, ...)."""
        return [f"[{group}]", "auth_type = password", f"auth_url = {self.url}",
                f"username = {user}", f"password = {self.password}",
                f"project_name = {project}", f"user_domain_name = {DOMAIN}",
                f"project_domain_name = {DOMAIN}", *extra, ""]

    def authtoken_section(self, user, *, service_token_roles_required=True):
        """``[keystone_authtoken]`` of a service validating tokens as ``user``."""
        return self.password_section(
            "keystone_authtoken", user, extra=[
                f"www_authenticate_uri = {self.url}", f"region_name = {REGION}",
                "service_token_roles = service",
                f"service_token_roles_required = {str(service_token_roles_required).lower()}",
                "http_request_max_retries = 3", "http_connect_timeout = 10"])

    def write_clouds_yaml(self, path, compute_api_version="2.96"):
        """One cloud per user (admin, demo member, demo reader); returns ``path``.

        JSON is YAML, so no YAML library is needed to write it.
        """
        clouds = {name: {
            "auth": {"auth_url": self.url, "username": user, "password": self.password,
                     "project_name": project, "user_domain_name": DOMAIN,
                     "project_domain_name": DOMAIN},
            "region_name": REGION, "interface": "public", "identity_api_version": "3",
            "compute_api_version": compute_api_version, "volume_api_version": "3"}
            for name, (user, project) in CLOUDS.items()}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"clouds": clouds}, f, indent=2)
            f.write("\n")
        return path


class _IdentityAdmin:
    """The few identity v3 admin calls provisioning needs (with timeouts)."""

    def __init__(self, url, token):
        self.url, self.token = url, token

    def _call(self, method, path, body=None):
        req = urllib.request.Request(
            self.url + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"X-Auth-Token": self.token, "Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise IdentityError(f"{method} {path}: {e.code} {e.read()[:300]!r}") from e
        return json.loads(raw) if raw else None

    def get(self, path):
        return self._call("GET", path)

    def post(self, path, body):
        return self._call("POST", path, body)

    def put(self, path):
        return self._call("PUT", path)

    def find(self, collection, name, key=None):
        items = self.get(f"/{collection}")[collection]
        match = key or (lambda item: item.get("name") == name)
        return next((item["id"] for item in items if match(item)), None)

    def ensure(self, collection, name, attrs, key=None):
        """The id of ``collection`` item ``name``, created with ``attrs`` if missing."""
        found = self.find(collection, name, key)
        if found:
            return found
        return self.post(f"/{collection}", {collection[:-1]: {"name": name, **attrs}})[
            collection[:-1]]["id"]


def main(argv=None):
    return single_process_main(
        KeystoneHarness, "keystone", "Install, bootstrap and run a real Keystone 30 in the "
        "foreground until interrupted.", argv)


if __name__ == "__main__":
    sys.exit(main())
