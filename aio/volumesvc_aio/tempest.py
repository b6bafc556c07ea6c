"""Run tempest 47's compute API tests against a keystone all-in-one.

Why here: tempest is the peer test suite of a Nova-compatible API, and it
needs a real Keystone (it makes a project and users per test class). This
builds tempest in its own cached virtualenv (pins in
``tempest-constraints.txt``), a workspace under the all-in-one's state dir,
a ``tempest.conf`` for what volumesvc serves (``doc/source/contributor/dependencies.rst`` has
the network settings that keep tempest off a network API we do not have),
and runs exactly the tests of ``tempest-include-list.txt`` minus those of
``tempest-exclude-list.txt`` (each with the missing feature as its reason),
three workers in parallel (the run's wall time is mostly server builds;
the all-in-one builds three at once on a two-core machine). Used by
``tools/dev.sh tempest``, ``tox -e tempest`` and the integration tier.

Use::

    python -m volumesvc_aio.tempest --state-dir /var/lib/volumesvc-aio
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

from volumesvc_aio import deps_dir as cache_dir
from volumesvc_aio import files, frozen_requirements, install_venv

TEMPEST_VERSION = "47.0.0"
HERE = os.path.dirname(os.path.abspath(__file__))
REQUIREMENTS = frozen_requirements(os.path.join(HERE, "tempest-constraints.txt"))
INCLUDE_LIST = os.path.join(HERE, "tempest-include-list.txt")
EXCLUDE_LIST = os.path.join(HERE, "tempest-exclude-list.txt")
# The tests that need two computes, run against the cluster deployment
# (tests/integration/cluster/test_tempest_moves.py) with CLUSTER_FEATURES.
CLUSTER_INCLUDE_LIST = os.path.join(HERE, "tempest-cluster-include-list.txt")
CONCURRENCY = 3
# The highest microversion tempest may ask for: tests below it run, tests
# that need more are skipped by tempest itself. 2.104 is the newest a test
# of tempest 47 asks for (the pinned availability zone update); volumesvc
# serves it.
MAX_MICROVERSION = "2.104"
FLAVOR, FLAVOR_ALT = "42", "1"
_TOTALS = re.compile(r"^ - (Passed|Skipped|Failed|Expected Fail|Unexpected Success): (\d+)",
                     re.M)

# [compute-feature-enabled]: what volumesvc serves (True) and what it does
# not (False); tempest skips the tests of a disabled feature.
COMPUTE_FEATURES = {
    "volume_multiattach": True,
    "snapshot": True,
    "swap_volume": True,
    "shelve": True,
    "shelve_migrate": False,
    # The all-in-one has one compute: a resize stays on it (its config allows it).
    "resize": True,
    "cold_migration": False,
    "live_migration": False,
    "pause": False,
    "suspend": False,
    "rescue": False,
    "console_output": True,
    "change_password": False,
    "interface_attach": False,
    "config_drive": False,
    "personality": False,
    "attach_encrypted_volume": False,
    "vnc_console": False,
    "serial_console": False,
    "spice_console": False,
    "metadata_service": False,
    "block_migration_for_live_migration": False,
    "hostname_fqdn_sanitization": False,
}


# What the cluster adds to COMPUTE_FEATURES: its computes each have a libvirt
# daemon of their own, so a volume-backed server moves between them. Block
# migration stays off (volumesvc moves only servers whose disks are all in
# Cinder).
CLUSTER_FEATURES = {
    "live_migration": True,
    "volume_backed_live_migration": True,
    "cold_migration": True,
    "block_migration_for_live_migration": False,
}

MULTIATTACH_TYPE = "multiattach"


def tempest_conf(*, identity_url, password, image_id, workspace, alt_image_id=None,
                 multiattach_type=MULTIATTACH_TYPE, compute_nodes=1, features=None,
                 ca_file=None):
    """The tempest.conf text for a keystone deployment (see the module docstring).

    ``compute_nodes``: tempest's ``min_compute_nodes`` (its multi-node tests
    skip below 2); ``features`` override COMPUTE_FEATURES; ``ca_file``: the
    CA of a deployment whose endpoints are HTTPS (the cluster's).
    """
    sections = {
        "DEFAULT": {"log_dir": os.path.join(workspace, "logs"), "log_file": "tempest.log"},
        "auth": {"use_dynamic_credentials": True, "create_isolated_networks": False,
                 "admin_username": "admin", "admin_password": password,
                 "admin_project_name": "admin", "admin_domain_name": "Default"},
        "identity": {"uri_v3": identity_url, "auth_version": "v3", "region": "RegionOne",
                     **({"ca_certificates_file": ca_file} if ca_file else {})},
        "identity-feature-enabled": {"api_v2": False},
        "compute": {"image_ref": image_id, "image_ref_alt": alt_image_id or image_id,
                    "flavor_ref": FLAVOR, "flavor_ref_alt": FLAVOR_ALT,
                    "min_microversion": "2.1", "max_microversion": MAX_MICROVERSION,
                    "region": "RegionOne", "build_timeout": 180,
                    "min_compute_nodes": compute_nodes},
        "compute-feature-enabled": {**COMPUTE_FEATURES, **(features or {})},
        # volume_type_multiattach: without it tempest's "multiattach" volumes
        # are plain ones and its second attach is refused.
        "volume": {"catalog_type": "block-storage", "region": "RegionOne",
                   "build_timeout": 180, "volume_size": 1,
                   "volume_type_multiattach": multiattach_type,
                   "min_microversion": "3.0", "max_microversion": "3.71"},
        # NOTE: neutron "available" keeps the attach classes from skipping;
        # tempest then boots without networks (no fixed_network_name) and its
        # security-group clean-up gets Keystone's 404 ("not supported").
        "service_available": {"nova": True, "cinder": True, "glance": True,
                              "neutron": True, "swift": False, "horizon": False},
        "network": {"catalog_type": "identity"},
        "validation": {"run_validation": False},
        "image-feature-enabled": {"api_v1": False},
    }
    lines = []
    for name, options in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {value}" for key, value in options.items()]
        lines.append("")
    return "\n".join(lines)


def parse_totals(output):
    """{"Passed": n, "Skipped": n, "Failed": n, ...} from tempest run's summary."""
    return {name: int(count) for name, count in _TOTALS.findall(output)}


class TempestWorkspace:
    """A tempest virtualenv (cached) and a workspace of one all-in-one under ``root``.

    ``tempest init`` wants an empty directory: the workspace is
    ``root/workspace``, with the install log and the workspace registry
    beside it (never the per-user ``~/.tempest/workspace.yaml``).
    """

    def __init__(self, root, deps_dir=None):
        self.root = os.path.abspath(root)
        self.workspace = os.path.join(self.root, "workspace")
        self.venv = os.path.join(cache_dir(deps_dir), f"tempest-{TEMPEST_VERSION}")
        self.config_file = os.path.join(self.workspace, "etc", "tempest.conf")

    def _bin(self, name):
        return os.path.join(self.venv, "bin", name)

    def install(self):
        os.makedirs(self.root, exist_ok=True)
        return install_venv(self.venv, REQUIREMENTS,
                            log=os.path.join(self.root, "install.log"))

    def init(self):
        """``tempest init`` once; its workspace registry stays inside the workspace."""
        if os.path.exists(os.path.join(self.workspace, ".stestr.conf")):
            return
        subprocess.run([self._bin("tempest"), "init", "--workspace-path",
                        os.path.join(self.root, "workspaces.yaml"), "--name",
                        "volumesvc-" + hashlib.sha1(self.workspace.encode()).hexdigest()[:12],
                        self.workspace],
                       check=True, capture_output=True, text=True, timeout=120,
                       cwd=self.root)

    def configure(self, **settings):
        # The admin's password is in it.
        files.write_private(self.config_file, tempest_conf(workspace=self.workspace, **settings))

    def _selection(self, include_list, exclude_list):
        argv = [self._bin("tempest"), "run", "--config-file", self.config_file,
                "--include-list", include_list]
        return argv + (["--exclude-list", exclude_list] if exclude_list else [])

    def list_tests(self, include_list=INCLUDE_LIST, exclude_list=EXCLUDE_LIST):
        """The test ids the lists select (tempest applies no skips when listing)."""
        result = subprocess.run([*self._selection(include_list, exclude_list), "--list-tests"],
                                cwd=self.workspace, capture_output=True, text=True,
                                timeout=300, check=True)
        return [line.split("[")[0] for line in result.stdout.splitlines()
                if line.startswith("tempest.")]

    def run(self, include_list=INCLUDE_LIST, exclude_list=EXCLUDE_LIST,
            concurrency=CONCURRENCY, out=None, timeout=1800):
        """Run the listed tests; return (exit code, totals, output)."""
        argv = [*self._selection(include_list, exclude_list),
                "--concurrency", str(concurrency)]
        proc = subprocess.Popen(argv, cwd=self.workspace, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PATH": os.path.dirname(self._bin("x"))
                                     + os.pathsep + os.environ.get("PATH", "")})
        chunks = []
        deadline = time.monotonic() + timeout
        for line in proc.stdout:
            chunks.append(line)
            if out is not None:
                out.write(line)
                out.flush()
            if time.monotonic() > deadline:
                proc.kill()
                break
        returncode = proc.wait()
        output = "".join(chunks)
        return returncode, parse_totals(output), output


def _admin_token(identity_url, password):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": password}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
    req = urllib.request.Request(identity_url + "/auth/tokens", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.headers["X-Subject-Token"], json.load(resp)["token"]["catalog"]


def _admin_call(identity_url, password, service_type, path, body=None):
    """One admin request to the public endpoint of ``service_type``; its parsed answer."""
    token, catalog = _admin_token(identity_url, password)
    base = next(ep["url"] for service in catalog if service["type"] == service_type
                for ep in service["endpoints"] if ep["interface"] == "public")
    req = urllib.request.Request(
        base.rstrip("/") + path, method="GET" if body is None else "POST",
        data=None if body is None else json.dumps(body).encode(),
        headers={"X-Auth-Token": token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def multiattach_volume_type(identity_url, password, name=MULTIATTACH_TYPE):
    """Make sure Cinder has the public volume type ``name`` with ``multiattach``.

    tempest makes its multiattach volumes with ``[volume]
    volume_type_multiattach`` and does not create that type itself.
    """
    types = _admin_call(identity_url, password, "block-storage", "/types")["volume_types"]
    if not any(t["name"] == name for t in types):
        _admin_call(identity_url, password, "block-storage", "/types", {"volume_type": {
            "name": name, "extra_specs": {"multiattach": "<is> True"}}})
    return name


def starter_image(identity_url, password):
    """The all-in-one's starter image id, found through the catalog's image endpoint."""
    from volumesvc_aio.config import STARTER_IMAGE_NAME

    images = [i for i in _admin_call(identity_url, password, "image",
                                     f"/v2/images?name={STARTER_IMAGE_NAME}")["images"]
              if i["status"] == "active"]
    if not images:
        raise RuntimeError(f"no active {STARTER_IMAGE_NAME} image in Glance")
    return images[0]["id"]


ALT_IMAGE_NAME = "volumesvc-tiny-raw-alt"


def alt_image(identity_url, password):
    """A second public raw image (id), made once: tempest's ``image_ref_alt``.

    tempest skips its server list tests by image unless ``image_ref`` and
    ``image_ref_alt`` differ (the second server must boot another image).
    """
    from volumesvc_aio.config import ensure_image

    token, catalog = _admin_token(identity_url, password)
    base = next(ep["url"] for service in catalog if service["type"] == "image"
                for ep in service["endpoints"] if ep["interface"] == "public")
    return ensure_image(base.rstrip("/"), None, token=token, name=ALT_IMAGE_NAME)


def run_against(state_dir, *, deps_dir=None, out=sys.stdout, include_list=INCLUDE_LIST,
                exclude_list=EXCLUDE_LIST, concurrency=CONCURRENCY, **settings):
    """Install, configure and run tempest for the keystone deployment in ``state_dir``.

    ``state_dir`` holds the deployment's ``clouds.yaml`` (the all-in-one's,
    or the cluster's); ``settings`` go to :func:`tempest_conf`
    (``compute_nodes``, ``features``, ``ca_file``). Returns (exit code,
    totals, output, the ids the lists select).
    """
    with open(os.path.join(state_dir, "clouds.yaml")) as f:
        admin = json.load(f)["clouds"]["volumesvc-aio"]["auth"]
    workspace = TempestWorkspace(os.path.join(state_dir, "tempest"), deps_dir=deps_dir)
    started = time.monotonic()
    workspace.install()
    workspace.init()
    workspace.configure(identity_url=admin["auth_url"], password=admin["password"],
                        image_id=starter_image(admin["auth_url"], admin["password"]),
                        alt_image_id=alt_image(admin["auth_url"], admin["password"]),
                        multiattach_type=multiattach_volume_type(admin["auth_url"],
                                                                 admin["password"]),
                        **settings)
    print(f"tempest: {workspace.venv} and {workspace.workspace} ready in "
          f"{time.monotonic() - started:.1f}s", file=out, flush=True)
    selected = workspace.list_tests(include_list, exclude_list)
    returncode, totals, output = workspace.run(include_list, exclude_list,
                                               concurrency=concurrency, out=out)
    print(summary(totals, selected), file=out, flush=True)
    return returncode, totals, output, selected


def summary(totals, selected):
    return "tempest: listed={} passed={} skipped={} failed={}".format(
        len(selected), totals.get("Passed", 0), totals.get("Skipped", 0),
        totals.get("Failed", 0))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m volumesvc_aio.tempest",
        description="Run the listed tempest tests against a running keystone all-in-one.")
    parser.add_argument("--state-dir", default="/var/lib/volumesvc-aio",
                        help="the all-in-one's state dir (its clouds.yaml is read)")
    parser.add_argument("--deps-dir")
    args = parser.parse_args(argv)
    returncode, totals, _, selected = run_against(args.state_dir, deps_dir=args.deps_dir)
    if returncode == 0 and totals.get("Passed", 0) != len(selected):
        return 1  # a listed test did not run (skipped, or nothing ran): not a pass
    return returncode


if __name__ == "__main__":
    sys.exit(main())
