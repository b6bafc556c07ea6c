"""One all-in-one for the whole clients suite, and the real clients pointed at it.

The clients are used unmodified, the way an operator would run them against
an endpoint-only (noauth2) deployment:

* python-novaclient: ``novaclient.client.Client("2.96", session=...)`` where the
  session's auth is ``keystoneauth1.token_endpoint.Token(<compute url>, "user:project")``.
* openstacksdk: ``openstack.connection.Connection(auth_type="admin_token",
  auth={"endpoint": <compute url>, "token": ...}, compute_api_version="2.96",
  identity_api_version="3", identity_endpoint_override=<compute url>,
  image_endpoint_override=<glance url>)``. Without the identity pair the sdk's
  identity proxy is discovered at the compute endpoint (version 2.1 → an
  identity *v2* proxy) and OSC's ``server list`` refuses to run (it insists on
  identity v3 even when it never calls it); without the image override image
  look-ups go to the compute endpoint.
* OSC: ``openstack --os-auth-type admin_token --os-endpoint <compute url>
  --os-token admin:admin --os-compute-api-version 2.96 --os-identity-api-version 3``
  with ``OS_IDENTITY_ENDPOINT_OVERRIDE=<compute url>`` and
  ``OS_IMAGE_ENDPOINT_OVERRIDE=<glance url>`` in the environment (OSC has no flag
  for per-service endpoint overrides; openstacksdk reads them from ``OS_*``).
* Cinder assertions: python-cinderclient at volume API 3.67 (no project id in
  the URL, so noauth's non-hex ``admin`` project works) with an admin token.

Never skips: if the all-in-one does not come up the session fails with its
output and the last lines of every log.
"""

import contextlib
import json
import subprocess

import pytest

from tests.integration.clients.helpers import (
    SERVER_TIMEOUT,
    cinder_client,
    nova_client,
    osc_argv,
    osc_env,
    running_aio,
    sdk_connection,
)

VOLUME_TYPE = "gold"
FAILED_ATTACHMENT_TTL = 20


@pytest.fixture(scope="session")
def aio():
    """One ``volumesvc-aio`` on free ports with a state dir under /var/tmp."""
    # A short failed-attachment TTL so test_attachment_status.py sees one expire.
    with running_aio("vs-clients-", extra_args=(
            "--failed-attachment-ttl", str(FAILED_ATTACHMENT_TTL))) as handle:
        yield handle
    assert handle.returncode == 0, f"volumesvc-aio stopped with {handle.returncode}"
    assert handle.leftover_qemu == [], (
        f"QEMU processes of {handle.state_dir} outlived the all-in-one (killed now): "
        f"{handle.leftover_qemu}")


# -- clients -------------------------------------------------------------------

@pytest.fixture(scope="session")
def nova(aio):
    return nova_client(aio)


@pytest.fixture(scope="session")
def sdk(aio):
    return sdk_connection(aio)


@pytest.fixture(scope="session")
def cinder(aio):
    return cinder_client(aio)


@pytest.fixture(scope="session")
def osc(aio):
    """``osc("server", "show", id)`` → parsed ``-f json`` output (or text with json=False)."""
    def run(*args, json_out=True, timeout=SERVER_TIMEOUT + 60):
        argv = [*osc_argv(aio), *args, *(("-f", "json") if json_out else ())]
        result = subprocess.run(argv, env=osc_env(aio), capture_output=True, text=True,
                                timeout=timeout)
        assert result.returncode == 0, (
            f"{' '.join(argv)} exited {result.returncode}\nstdout: {result.stdout}\n"
            f"stderr: {result.stderr}\n{aio.logs(15)}")
        return json.loads(result.stdout) if json_out else result.stdout
    return run


@pytest.fixture(scope="session")
def volume_type(cinder):
    """A public, non-default Cinder volume type named gold."""
    vtype = cinder.volume_types.create(VOLUME_TYPE)
    yield vtype
    with contextlib.suppress(Exception):
        cinder.volume_types.delete(vtype.id)


# -- helpers -------------------------------------------------------------------
