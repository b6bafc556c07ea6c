"""Run a real Cinder 29 on this machine (all-in-one setup and integration tests).

Why a harness of our own: the integration tests and ``volumesvc-aio`` need a
real Cinder (noauth, RabbitMQ, SQL) whose volumes are real files QEMU can
open. This installs Cinder from PyPI into its own cached virtualenv, writes a
cinder.conf that uses the test-only file driver in ``aio/plugins``, starts
cinder-api, cinder-scheduler and cinder-volume in their own process groups
and waits until a volume can actually be scheduled. Every trap it avoids is
written down in ``doc/source/contributor/dependencies.rst`` ("Cinder").

Use::

    with CinderHarness("/var/tmp/c1", port=8776, transport_url=url) as cinder:
        print(cinder.url)

or ``python -m volumesvc_aio.cinder --state-dir D --port P`` for humans.
"""

import argparse
import os
import shutil
import sys

from volumesvc_aio import (
    ServiceHarness,
    files,
    free_port,
    frozen_requirements,
    http_json,
    libvirtd,
    rabbit,
)
from volumesvc_aio import keystone as keystone_mod

CINDER_VERSION = "29.0.0"
# Cinder, its client, the fake driver's fixtures, PyMySQL and psycopg2, with every dependency
# pinned as installed once (upstream leaves them unpinned).
REQUIREMENTS = frozen_requirements(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "cinder-constraints.txt"))
PLUGINS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
FILE_DRIVER = "volumesvc_cinder_plugins.file_driver.FileVolumeDriver"
COMPLETION_MANAGER = "volumesvc_cinder_plugins.extend_completion.CompletionVolumeManager"
SHOW_EXTEND_FILTER = ("[filter:volumesvc_show_extend_new_size]\n"
                      "paste.filter_factory = volumesvc_cinder_plugins.extend_completion:"
                      "show_extend_new_size_factory\n")
BACKEND = "file"
# A second file backend (``second_file_backend``): a retype between ``file``
# and this one is a real migration, so Cinder swaps an attached volume
# through the compute API as it would between two storage systems.
SECOND_FILE_BACKEND = "file-b"
RBD_BACKEND = "rbd"
RBD_DRIVER = "cinder.volume.drivers.rbd.RBDDriver"
ADMIN_TOKEN = "admin:admin"  # noauth: "<user>:<project>", every request is admin
SERVICES = ("cinder-api", "cinder-scheduler", "cinder-volume")
# With a key manager each backend also gets a type ``<backend>-luks`` with this
# encryption: LUKS (version 1, what QEMU opens natively), AES-XTS with a 256-bit
# key, encrypted and decrypted on the compute.
ENCRYPTED_TYPE_SUFFIX = "-luks"
ENCRYPTION = (("provider", "luks"), ("cipher", "aes-xts-plain64"), ("key_size", 256),
              ("control_location", "front-end"))


class CinderHarness(ServiceHarness):
    """A real Cinder (API, scheduler, volume) with the file driver, noauth.

    :param state_dir: everything it writes (config, state_path, logs, volume
        files, SQLite DB). Keep it on a real filesystem, not tmpfs.
    :param port: cinder-api port on 127.0.0.1.
    :param transport_url: oslo.messaging URL; give each harness its own
        RabbitMQ vhost (``rabbit.ensure_vhost``) so runs never cross.
    :param database_connection: SQLAlchemy URL; default SQLite in state_dir.
        SQLite hits "database is locked" under concurrent requests: use
        PostgreSQL/MariaDB (``mysql+pymysql://``/``postgresql://``) there.
    :param deps_dir: virtualenv cache (default ``$VOLUMESVC_DEPS_DIR`` or
        ``~/.cache/volumesvc``).
    :param nova_endpoint: our compute API (``http://host:port/v2.1``) for
        os-server-external-events.
    :param glance_url: Glance endpoint for image-backed volumes.
    :param host: Cinder's fixed host name (cinder-volume is ``host@file``).
    :param volume_manager: optional ``[DEFAULT] volume_manager`` override.
    :param extend_completion: load the test-only extension of
        ``aio/plugins/.../extend_completion.py``: attached volumes wait in
        ``extending`` for the compute's ``os-extend_volume_completion`` (our
        2.105) and the API shows ``extend_new_size`` in ``metadata``.
    :param ceph: a started ``volumesvc_aio.ceph.CephHarness``: add the ``rbd``
        backend (RBDDriver, pool ``volumes`` as ``client.cinder``) beside
        ``file``, volume types ``rbd`` and ``file`` bound to them by
        ``volume_backend_name`` (:meth:`ensure_volume_types`) and ``rbd`` as
        the default type. Its rados/rbd bindings come from Debian's packages.
    :param rbd_secret_uuid: the libvirt secret the computes define with
        client.cinder's key; Cinder only names it in ``connection_info``.
    :param keystone: a started KeystoneHarness: validate tokens as the
        ``cinder`` user and call the compute API (``[nova]``, endpoint from the
        catalog) with a service token (see ``aio/keystone.py``).
    :param second_file_backend: add a second file backend,
        ``SECOND_FILE_BACKEND``, with its own directory (and a volume type of
        its name): a retype in use between it and ``file`` makes Cinder
        migrate the volume and ask the compute API for a swap.
    :param key_manager_url: a started Barbican's endpoint: Cinder keeps the
        keys of encrypted volumes there (castellan, ``[key_manager]``) and
        :meth:`ensure_volume_types` adds an encrypting type per backend
        (``ENCRYPTED_TYPE_SUFFIX``, ``ENCRYPTION``).
    """

    LABEL = "Cinder"
    VERSION = CINDER_VERSION
    REQUIREMENTS = REQUIREMENTS
    READY_TIMEOUT = 120.0

    def __init__(self, state_dir, *, port=8776, transport_url=None,
                 database_connection=None, deps_dir=None, nova_endpoint=None,
                 glance_url=None, host="volumesvc-cinder", volume_manager=None,
                 keystone=None, extend_completion=False, default_quotas=None,
                 ceph=None, rbd_secret_uuid=None, api_workers=1, key_manager_url=None,
                 second_file_backend=False):
        super().__init__(state_dir, port, deps_dir)
        self.second_file_backend = second_file_backend
        self.key_manager_url = key_manager_url
        # cinder-api processes: one keeps the all-in-one small; a storm of a
        # hundred attaches queues in that one process first (benchmarks/aio_storage).
        self.api_workers = int(api_workers)
        if ceph is not None and not rbd_secret_uuid:
            raise ValueError("an rbd backend needs rbd_secret_uuid")
        self.ceph = ceph
        self.rbd_secret_uuid = rbd_secret_uuid
        self.keystone = keystone
        # {"volumes": -1, ...}: Cinder's ``quota_<name>`` defaults for every
        # project (None keeps Cinder's own: 10 volumes per project).
        self.default_quotas = dict(default_quotas or {})
        self.transport_url = transport_url or rabbit.transport_url("/")
        self.database_connection = (database_connection or
                                    f"sqlite:///{self.state_dir}/cinder.sqlite")
        self.nova_endpoint = nova_endpoint
        self.glance_url = glance_url
        self.host = host
        self.extend_completion = extend_completion
        self.volume_manager = volume_manager or (COMPLETION_MANAGER if extend_completion
                                                 else None)
        self.config_file = os.path.join(self.state_dir, "cinder.conf")
        self.volumes_dir = os.path.join(self.state_dir, "volumes")
        self.second_volumes_dir = os.path.join(self.state_dir, "volumes-b")

    # -- properties ------------------------------------------------------------
    @property
    def endpoint(self):
        """Base URL without version (GET answers 300 with the versions)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self):
        """Volume API v3 endpoint, the value for ``[cinder] endpoint_override``."""
        return f"{self.endpoint}/v3"

    # -- configure -------------------------------------------------------------
    def _venv_etc(self, name):
        return os.path.join(self.venv, "etc", "cinder", name)

    def config_text(self) -> str:
        """The cinder.conf contents (doc/source/contributor/dependencies.rst says why)."""
        state = os.path.join(self.state_dir, "state")
        lines = [
            "[DEFAULT]",
            f"auth_strategy = {'keystone' if self.keystone else 'noauth'}",
            f"transport_url = {self.transport_url}",
            f"host = {self.host}",
            "my_ip = 127.0.0.1",
            f"state_path = {state}",
            f"api_paste_config = {self.state_dir}/api-paste.ini",
            f"resource_query_filters_file = {self.state_dir}/resource_filters.json",
            f"rootwrap_config = {self._venv_etc('rootwrap.conf')}",
            "osapi_volume_listen = 127.0.0.1",
            f"osapi_volume_listen_port = {self.port}",
            f"osapi_volume_workers = {self.api_workers}",
            # cinder-api's wait for cinder-volume: Cinder's own default, with
            # Ceph too. RBD connections are slow under load (`ceph mon dump`
            # per connection); volumesvc's pacing of its Cinder calls
            # ([cinder] max_concurrent_calls) keeps a storm inside this wait.
            "rpc_response_timeout = 60",
            f"enabled_backends = {','.join(self.backends)}",
            "report_interval = 2",
            "service_down_time = 10",
            "periodic_interval = 5",
            # The file driver reports multiattach, so CapabilitiesFilter can stay.
            "scheduler_default_filters = AvailabilityZoneFilter,CapacityFilter,"
            "CapabilitiesFilter",
            f"image_conversion_dir = {state}/conversion",
            "debug = true",
            "use_stderr = true",
        ]
        if self.volume_manager:
            lines.append(f"volume_manager = {self.volume_manager}")
        lines += [f"quota_{name} = {value}" for name, value in sorted(self.default_quotas.items())]
        if self.glance_url:
            lines.append(f"glance_api_servers = {self.glance_url}")
        if self.ceph is not None:
            lines.append(f"default_volume_type = {RBD_BACKEND}")
        lines += [
            "", "[database]", f"connection = {self.database_connection}",
            "", "[oslo_concurrency]", f"lock_path = {state}/lock",
            "", "[cinder_sys_admin]",
            # No sudo on these machines: run privsep's helper directly.
            f"helper_command = {self._bin('privsep-helper')} --config-file {self.config_file}",
            "", f"[{BACKEND}]",
            f"volume_driver = {FILE_DRIVER}",
            f"volume_backend_name = {BACKEND}",
            f"file_volume_dir = {self.volumes_dir}",
            "",
        ]
        if self.second_file_backend:
            lines += [f"[{SECOND_FILE_BACKEND}]",
                      f"volume_driver = {FILE_DRIVER}",
                      f"volume_backend_name = {SECOND_FILE_BACKEND}",
                      f"file_volume_dir = {self.second_volumes_dir}",
                      ""]
        if self.ceph is not None:
            lines += self._rbd_section()
        if self.key_manager_url:
            lines += self._key_manager_sections()
        if self.keystone is not None:
            lines += keystone_sections(self.keystone)
        elif self.nova_endpoint:
            # NOTE: the events go out with the [nova] credentials; our API's
            # noauth2 wants a token (``user:project``), and only an admin or
            # a service may post os-server-external-events.
            lines += ["[nova]", "auth_type = admin_token", f"endpoint = {self.nova_endpoint}",
                      f"token = {ADMIN_TOKEN}", ""]
        return "\n".join(lines)

    @property
    def backends(self):
        """Cinder's ``enabled_backends``: each is also a volume type's name."""
        backends = (RBD_BACKEND, BACKEND) if self.ceph is not None else (BACKEND,)
        return backends + ((SECOND_FILE_BACKEND,) if self.second_file_backend else ())

    def _rbd_section(self):
        """The rbd backend: volumes in pool ``volumes`` as client.cinder.

        ``rbd_exclusive_cinder_pool``: the pool holds only Cinder's images,
        so the capacity report sums the pool instead of opening every image.
        """
        return [f"[{RBD_BACKEND}]",
                f"volume_driver = {RBD_DRIVER}",
                f"volume_backend_name = {RBD_BACKEND}",
                "rbd_pool = volumes",
                f"rbd_ceph_conf = {self.ceph.conf_path}",
                "rbd_user = cinder",
                f"rbd_secret_uuid = {self.rbd_secret_uuid}",
                "rbd_exclusive_cinder_pool = true",
                "rados_connect_timeout = 5",
                "report_discard_supported = true",
                ""]

    def _key_manager_sections(self):
        """castellan's Barbican backend at that endpoint; the user's token goes with each call."""
        lines = ["[key_manager]", "backend = barbican",
                 "", "[barbican]", f"barbican_endpoint = {self.key_manager_url}",
                 "barbican_api_version = v1"]
        if self.keystone is not None:
            lines.append(f"auth_endpoint = {self.keystone.url}")
        return lines + [""]

    def configure(self):
        """Write cinder.conf and copies of the venv's paste and filter files."""
        for d in (self.state_dir, self.log_dir,
                  os.path.join(self.state_dir, "state", "lock"),
                  os.path.join(self.state_dir, "state", "conversion")):
            os.makedirs(d, exist_ok=True)
        # The guests' disks: QEMU (root, or the operator's group) opens them.
        files.private_dir(self.volumes_dir, group=libvirtd.configured_qemu_group())
        if self.second_file_backend:
            files.private_dir(self.second_volumes_dir,
                              group=libvirtd.configured_qemu_group())
        for name in ("api-paste.ini", "resource_filters.json"):
            shutil.copyfile(self._venv_etc(name), os.path.join(self.state_dir, name))
        if self.extend_completion:
            path = os.path.join(self.state_dir, "api-paste.ini")
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(with_show_extend_filter(text))
        self._add_hold_filter(os.path.join(self.state_dir, "api-paste.ini"))
        if self.key_manager_url and self.keystone is None:
            self._add_noauth_token_filter(os.path.join(self.state_dir, "api-paste.ini"))
        files.write_private(self.config_file, self.config_text())

    @property
    def hold_marker(self):
        """While this file exists, cinder-api holds its answers to attachment creates."""
        return os.path.join(self.state_dir, "hold-attachment-creates")

    def _add_hold_filter(self, paste_ini):
        """Put the test-only ``hold`` filter (plugins/.../hold.py) in front of the v3 API."""
        with open(paste_ini) as f:
            text = f.read()
        text = text.replace(" apiv3\n", " volumesvc_hold apiv3\n")
        text += ("\n[filter:volumesvc_hold]\n"
                 "paste.filter_factory = volumesvc_cinder_plugins.hold:filter_factory\n"
                 f"marker_file = {self.hold_marker}\n")
        with open(paste_ini, "w") as f:
            f.write(text)

    @staticmethod
    def _add_noauth_token_filter(paste_ini):
        """Keep the noauth token on Cinder's context (plugins/.../noauth_token.py)."""
        with open(paste_ini) as f:
            text = f.read()
        text = text.replace(" noauth ", " noauth volumesvc_noauth_token ")
        text += ("\n[filter:volumesvc_noauth_token]\n"
                 "paste.filter_factory = volumesvc_cinder_plugins.noauth_token:filter_factory\n")
        with open(paste_ini, "w") as f:
            f.write(text)

    # -- run -------------------------------------------------------------------
    def install(self) -> bool:
        installed = super().install()
        if self.ceph is not None:
            # The RBD driver imports rados/rbd: Debian's, into this venv only.
            from volumesvc_aio import ceph as ceph_mod

            ceph_mod.expose_ceph_modules(self.venv)
        return installed

    def _env(self):
        env = super()._env()
        # cinder-volume runs Debian's ``ceph`` (mon addresses) and qemu-img.
        if "/usr/bin" not in env["PATH"].split(os.pathsep):
            env["PATH"] += os.pathsep + "/usr/bin"
        env["PYTHONPATH"] = PLUGINS_DIR + (os.pathsep + env["PYTHONPATH"]
                                           if env.get("PYTHONPATH") else "")
        return env

    def _commands(self):
        """The three services, each with our cinder.conf."""
        return [(name, [self._bin(name), "--config-file", self.config_file])
                for name in SERVICES]

    def api_get(self, path, microversion="3.67"):
        """Admin GET on the v3 API (no project in the URL, hence >= 3.67)."""
        token = self.keystone.token() if self.keystone is not None else ADMIN_TOKEN
        return http_json(self.url + path, headers={
            "X-Auth-Token": token, "OpenStack-API-Version": f"volume {microversion}",
            "Accept": "application/json"})

    def api_request(self, method, path, body=None, microversion="3.67"):
        """Admin request with a JSON body on the v3 API → (status, parsed body)."""
        import json
        import urllib.error
        import urllib.request

        token = self.keystone.token() if self.keystone is not None else ADMIN_TOKEN
        request = urllib.request.Request(
            self.url + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"X-Auth-Token": token, "Content-Type": "application/json",
                     "OpenStack-API-Version": f"volume {microversion}",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, json.loads(raw) if raw else None

    def ensure_volume_types(self):
        """One public volume type per backend, named after it, bound by volume_backend_name.

        With a key manager, also ``<backend>-luks`` per backend: the same
        backend, encrypted on the compute (``ENCRYPTION``). Idempotent (a
        restart finds them). Returns {name: type id}.
        """
        status, body = self.api_get("/types?is_public=None")
        if status != 200:
            raise RuntimeError(f"listing Cinder volume types answered {status}: {body}")
        found = {t["name"]: t["id"] for t in body["volume_types"]}
        for name in self.backends:
            if name in found:
                continue
            status, body = self.api_request("POST", "/types", {"volume_type": {
                "name": name, "os-volume-type-access:is_public": True,
                "description": f"volumes of Cinder's {name} backend",
                "extra_specs": {"volume_backend_name": name}}})
            if status != 200:
                raise RuntimeError(f"creating Cinder volume type {name} answered {status}: "
                                   f"{body}")
            found[name] = body["volume_type"]["id"]
        if self.key_manager_url:
            for backend in self.backends:
                name = backend + ENCRYPTED_TYPE_SUFFIX
                if name not in found:
                    found[name] = self._create_encrypted_type(name, backend)
        return found

    def _create_encrypted_type(self, name, backend):
        status, body = self.api_request("POST", "/types", {"volume_type": {
            "name": name, "os-volume-type-access:is_public": True,
            "description": f"volumes of Cinder's {backend} backend, LUKS-encrypted on the "
                           "compute (key in Barbican)",
            "extra_specs": {"volume_backend_name": backend}}})
        if status != 200:
            raise RuntimeError(f"creating Cinder volume type {name} answered {status}: {body}")
        type_id = body["volume_type"]["id"]
        status, body = self.api_request("POST", f"/types/{type_id}/encryption",
                                        {"encryption": dict(ENCRYPTION)})
        if status != 200:
            raise RuntimeError(f"adding encryption to Cinder volume type {name} answered "
                               f"{status}: {body}")
        return type_id

    def wait_ready(self, timeout=None):
        super().wait_ready(timeout)
        if self.ceph is not None or self.key_manager_url:
            self.ensure_volume_types()
        return self

    def _ready(self):
        """GET / is 300, cinder-volume is up and the scheduler knows a pool.

        Before the pool shows up creates fail with "No valid backend".
        """
        self._check_alive()
        status, _ = http_json(self.endpoint + "/")
        if status != 300:
            return False
        status, body = self.api_get("/os-services?binary=cinder-volume")
        if status != 200:
            return False
        up = {s["host"].partition("@")[2] for s in body.get("services", [])
              if s.get("state") == "up"}
        if not set(self.backends) <= up:
            return False
        status, body = self.api_get("/scheduler-stats/get_pools")
        pools = {p["name"].partition("@")[2].partition("#")[0]
                 for p in (body or {}).get("pools", [])}
        return status == 200 and set(self.backends) <= pools


def keystone_sections(keystone):
    """Cinder's keystone sections: its authtoken, ``[nova]`` and ``[service_user]``.

    ``[glance]`` lets cinder-volume ask Glance where an image is stored;
    ``[nova]`` finds the compute API in the catalog (type ``compute``); the
    service token on those calls is what our service-only policies (swap,
    external events) and Cinder's own attachment-delete guard look for.
    """
    return [*keystone.authtoken_section("cinder"),
            # Glance's image-locations API (an RBD clone's source) is for
            # the service role only.
            *keystone.password_section("glance", "cinder"),
            *keystone.password_section("nova", "cinder", extra=[
                f"region_name = {keystone_mod.REGION}", "interface = public"]),
            *keystone.password_section("service_user", "cinder", extra=[
                "send_service_user_token = true"])]


def with_show_extend_filter(paste_ini):
    """Cinder's api-paste.ini with the extension's filter just before ``apiv3``."""
    lines = []
    for line in paste_ini.splitlines():
        name, sep, pipeline = line.partition("=")
        if sep and pipeline.rstrip().endswith(" apiv3") and name.strip() != "use":
            line = line.rstrip()[:-len(" apiv3")] + " volumesvc_show_extend_new_size apiv3"
        lines.append(line)
    return "\n".join(lines) + "\n\n" + SHOW_EXTEND_FILTER


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m volumesvc_aio.cinder",
        description="Install, configure and run a real Cinder 29 (noauth, file driver) "
                    "in the foreground until interrupted.")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--transport-url", help="default: a vhost named after --vhost")
    parser.add_argument("--vhost", default=None,
                        help="RabbitMQ vhost to create (default cinder-<port>)")
    parser.add_argument("--database-connection")
    parser.add_argument("--deps-dir")
    parser.add_argument("--nova-endpoint")
    parser.add_argument("--glance-url")
    parser.add_argument("--host", default="volumesvc-cinder")
    parser.add_argument("--extend-completion", action="store_true",
                        help="load the test-only extend-completion extension")
    parser.add_argument("--install-only", action="store_true")
    parser.add_argument("--clean", action="store_true", help="wipe state-dir first")
    args = parser.parse_args(argv)

    port = args.port or free_port()
    transport_url = args.transport_url or rabbit.ensure_vhost(args.vhost or f"cinder-{port}")
    harness = CinderHarness(args.state_dir, port=port, transport_url=transport_url,
                            database_connection=args.database_connection,
                            deps_dir=args.deps_dir, nova_endpoint=args.nova_endpoint,
                            glance_url=args.glance_url, host=args.host,
                            extend_completion=args.extend_completion)
    return harness.run_foreground(clean=args.clean, install_only=args.install_only)

if __name__ == "__main__":
    sys.exit(main())
