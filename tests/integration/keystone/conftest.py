"""One keystone all-in-one (``volumesvc-aio --auth keystone``) for the identity suite.

Everything authenticates for real here: the clients get tokens from the
Keystone the all-in-one started, with the users its ``clouds.yaml`` names
(admin; ``demo``, a member of project demo; ``demo-reader``, a reader of it),
and the service users ``cinder`` and ``volumesvc`` (``service`` and ``admin``
on project service). Tests that need another project make one through the
identity API (:func:`other_project`).

Never skips: if the all-in-one does not come up the session fails with its
output and the last lines of every log.
"""

import contextlib
import json
import os
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest

from tests.integration.clients.helpers import running_aio
from tests.integration.clients.helpers import wait_volume as wait_volume_status  # noqa: F401
from tests.integration.conftest import bin_path

COMPUTE_VERSION = "2.96"


@pytest.fixture(scope="session")
def kaio():
    with running_aio("vs-keystone-", auth="keystone") as handle:
        assert handle.identity_url and handle.clouds_yaml, handle.logs()
        yield handle
    assert handle.returncode == 0, f"volumesvc-aio stopped with {handle.returncode}"


@pytest.fixture(scope="session")
def clouds(kaio):
    with open(kaio.clouds_yaml) as f:
        return json.load(f)["clouds"]


@pytest.fixture(scope="session")
def password(clouds):
    return clouds["volumesvc-aio"]["auth"]["password"]


def get_token(identity_url, user, project, password):
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": "Default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}}
    req = urllib.request.Request(identity_url + "/auth/tokens", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.headers["X-Subject-Token"]


@pytest.fixture(scope="session")
def token(kaio, password):
    """``token(user, project)`` → a project-scoped Keystone token (cached per pair)."""
    cache = {}

    def get(user, project):
        if (user, project) not in cache:
            cache[user, project] = get_token(kaio.identity_url, user, project, password)
        return cache[user, project]
    return get


def http(method, url, token=None, body=None, headers=None, timeout=120):
    """(status, headers, parsed JSON or None) of one request."""
    all_headers = {"Content-Type": "application/json", "Accept": "application/json",
                   **(headers or {})}
    if token:
        all_headers["X-Auth-Token"] = token
    req = urllib.request.Request(url, method=method, headers=all_headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw, status, got = resp.read(), resp.status, resp.headers
    except urllib.error.HTTPError as exc:
        raw, status, got = exc.read(), exc.code, exc.headers
    try:
        return status, got, json.loads(raw) if raw else None
    except ValueError:
        return status, got, None


@pytest.fixture(scope="session")
def compute(kaio):
    """``compute(method, path, token, body=None, version=...)`` → (status, headers, body)."""
    def call(method, path, token, body=None, version=COMPUTE_VERSION, headers=None):
        return http(method, kaio.compute_url + path, token, body,
                    {"OpenStack-API-Version": f"compute {version}", **(headers or {})})
    return call


@pytest.fixture(scope="session")
def other_project(kaio, token, password):
    """A second project with a member user of the same name: ``(user, project)``."""
    admin = token("admin", "admin")
    name = f"other-{uuid.uuid4().hex[:6]}"
    url = kaio.identity_url
    _, _, project = http("POST", url + "/projects", admin,
                         {"project": {"name": name, "domain_id": "default"}})
    _, _, user = http("POST", url + "/users", admin, {"user": {
        "name": name, "domain_id": "default", "password": password}})
    _, _, roles = http("GET", url + "/roles?name=member", admin)
    status, _, _ = http("PUT", f"{url}/projects/{project['project']['id']}/users/"
                        f"{user['user']['id']}/roles/{roles['roles'][0]['id']}", admin)
    assert status == 204, status
    return name, name


def cinder_for(kaio, token, version="3.67"):
    """python-cinderclient on the aio's Cinder with ``token`` (volume API ``version``)."""
    from cinderclient import client as cinder
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint

    return cinder.Client(version, session=ks_session.Session(
        auth=token_endpoint.Token(kaio.volume_url, token)))


@pytest.fixture(scope="session")
def admin_cinder(kaio, token):
    return cinder_for(kaio, token("admin", "admin"))


@pytest.fixture(scope="session")
def demo_server(kaio, token, compute):
    """A server of the demo member, booted from a blank volume; deleted at the end."""
    from tests.integration.clients.helpers import unique

    member = token("demo", "demo")
    status, _, body = compute("POST", "/servers", member, {"server": {
        "name": unique("ks"), "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": [{
            "source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "boot_index": 0, "delete_on_termination": True}]}})
    assert status == 202, (status, body)
    server_id = body["server"]["id"]
    wait_status(compute, member, server_id, "ACTIVE", kaio)
    yield server_id
    with contextlib.suppress(Exception):
        compute("DELETE", f"/servers/{server_id}", member)


def wait_status(compute, token, server_id, wanted, kaio, timeout=120):
    import time

    deadline = time.monotonic() + timeout
    while True:
        status, _, body = compute("GET", f"/servers/{server_id}", token)
        current = body["server"]["status"] if status == 200 else status
        if current == wanted:
            return body["server"]
        if current == "ERROR" or time.monotonic() > deadline:
            pytest.fail(f"server {server_id} is {current}, wanted {wanted}\n{kaio.logs(20)}")
        time.sleep(0.5)


def _osc_env(kaio):
    """The environment of a client that reads only the all-in-one's clouds.yaml."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_CLIENT_CONFIG_FILE"] = kaio.clouds_yaml
    return env


@pytest.fixture(scope="module")
def osc(kaio):
    """``osc(cloud, *args)``: the openstack CLI with the all-in-one's clouds.yaml."""
    def run(cloud, *args, check=True, json_out=True):
        argv = [bin_path("openstack"), "--os-cloud", cloud, *args,
                *(("-f", "json") if json_out else ())]
        try:
            result = subprocess.run(argv, env=_osc_env(kaio), capture_output=True, text=True,
                                    timeout=240)
        except subprocess.TimeoutExpired as exc:
            # Say which call hung and what the services were doing meanwhile.
            pytest.fail(f"{' '.join(argv)} gave no answer in 240 s\nstderr so far: "
                        f"{exc.stderr!r}\n{kaio.logs(40)}")
        if check:
            assert result.returncode == 0, (
                f"{' '.join(argv)} exited {result.returncode}\n{result.stderr}\n"
                f"{kaio.logs(15)}")
            return json.loads(result.stdout) if json_out else result.stdout
        return result
    return run
