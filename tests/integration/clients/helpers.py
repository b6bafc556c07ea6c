"""Helpers of the clients suite: the real clients and the waits (see conftest.py)."""

import contextlib
import json
import os
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tests.integration.conftest import bin_path

SERVER_TIMEOUT = 120
ADMIN_TOKEN = "admin:admin"
COMPUTE_VERSION = "2.96"     # novaclient's maximum; the sdk caps servers at 2.100
VOLUME_VERSION = "3.67"      # /v3/<resource> without a project id


def nova_client(aio, token=ADMIN_TOKEN, version=COMPUTE_VERSION):
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint
    from novaclient import client as nova

    sess = ks_session.Session(auth=token_endpoint.Token(aio.compute_url, token))
    return nova.Client(version, session=sess)


def sdk_connection(aio, token=ADMIN_TOKEN):
    import openstack

    return openstack.connection.Connection(
        auth_type="admin_token", auth={"endpoint": aio.compute_url, "token": token},
        compute_api_version=COMPUTE_VERSION, identity_api_version="3",
        identity_endpoint_override=aio.compute_url, image_endpoint_override=aio.image_url)


def cinder_client(aio, token=ADMIN_TOKEN):
    from cinderclient import client as cinder
    from keystoneauth1 import session as ks_session
    from keystoneauth1 import token_endpoint

    sess = ks_session.Session(auth=token_endpoint.Token(aio.volume_url, token))
    return cinder.Client(VOLUME_VERSION, session=sess)


def osc_argv(aio, token=ADMIN_TOKEN):
    return [bin_path("openstack"), "--os-auth-type", "admin_token",
            "--os-endpoint", aio.compute_url, "--os-token", token,
            "--os-compute-api-version", COMPUTE_VERSION, "--os-identity-api-version", "3"]


def osc_env(aio):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_IDENTITY_ENDPOINT_OVERRIDE"] = aio.compute_url
    env["OS_IMAGE_ENDPOINT_OVERRIDE"] = aio.image_url
    return env


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def wait_server(nova, server_id, status="ACTIVE", timeout=SERVER_TIMEOUT, aio=None):
    """Poll with novaclient until ``status``; fail at once on ERROR with the fault."""
    deadline = time.monotonic() + timeout
    while True:
        server = nova.servers.get(server_id)
        if server.status == status:
            return server
        if server.status == "ERROR" or time.monotonic() > deadline:
            pytest.fail(f"server {server_id} is {server.status} "
                        f"(task {getattr(server, 'OS-EXT-STS:task_state', None)}, fault "
                        f"{getattr(server, 'fault', None)}), wanted {status}\n"
                        + (aio.logs(20) if aio else ""))
        time.sleep(0.5)


def wait_server_gone(nova, server_id, timeout=SERVER_TIMEOUT):
    from novaclient import exceptions as nova_exc

    deadline = time.monotonic() + timeout
    while True:
        try:
            server = nova.servers.get(server_id)
        except nova_exc.NotFound:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"server {server_id} still {server.status} after delete")
        time.sleep(0.5)


def delete_server_quietly(nova, server_id):
    """Cleanup path: delete if it still exists and wait until it is gone."""
    from novaclient import exceptions as nova_exc

    try:
        nova.servers.delete(server_id)
    except nova_exc.NotFound:
        return
    with contextlib.suppress(BaseException):
        wait_server_gone(nova, server_id)


def wait_volume(cinder, volume_id, status, timeout=SERVER_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        volume = cinder.volumes.get(volume_id)
        if volume.status == status:
            return volume
        if volume.status.startswith("error") or time.monotonic() > deadline:
            pytest.fail(f"volume {volume_id} is {volume.status}, wanted {status}")
        time.sleep(0.5)


def wait_volume_gone(cinder, volume_id, timeout=SERVER_TIMEOUT):
    from cinderclient import exceptions as cinder_exc

    deadline = time.monotonic() + timeout
    while True:
        try:
            volume = cinder.volumes.get(volume_id)
        except cinder_exc.NotFound:
            return
        if volume.status.startswith("error") or time.monotonic() > deadline:
            pytest.fail(f"volume {volume_id} still there ({volume.status}); "
                        f"delete_on_termination was true")
        time.sleep(0.5)


def delete_volume_quietly(cinder, volume_id):
    from cinderclient import exceptions as cinder_exc

    with contextlib.suppress(cinder_exc.NotFound):
        cinder.volumes.delete(volume_id)
        with contextlib.suppress(BaseException):
            wait_volume_gone(cinder, volume_id)


def wait_snapshot_gone(cinder, snapshot_id, timeout=SERVER_TIMEOUT):
    from cinderclient import exceptions as cinder_exc

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            cinder.volume_snapshots.get(snapshot_id)
        except cinder_exc.NotFound:
            return
        time.sleep(0.5)
    pytest.fail(f"snapshot {snapshot_id} still there")


def glance_image(aio, image_id):
    """GET /v2/images/<id> from the aio's Glance (no auth); None when it is gone."""
    try:
        with urllib.request.urlopen(f"{aio.image_url}/v2/images/{image_id}", timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def glance_delete(aio, image_id):
    req = urllib.request.Request(f"{aio.image_url}/v2/images/{image_id}", method="DELETE")
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(req, timeout=10).close()


def attached_volume_ids(server):
    """Volume ids of a novaclient Server, in BDM order."""
    return [v["id"] for v in getattr(server, "os-extended-volumes:volumes_attached")]


def server_attr(server, key):
    return server.to_dict()[key]
