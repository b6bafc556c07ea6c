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
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest

from tests.integration.clients.helpers import (
    SERVER_TIMEOUT,
    cinder_client,
    nova_client,
    osc_argv,
    osc_env,
    sdk_connection,
)
from tests.integration.conftest import bin_path, free_port

READY_TIMEOUT = 400
VOLUME_TYPE = "gold"

_READY = re.compile(r"^volumesvc-aio: ready compute=(\S+) volume=(\S+)$")
_IMAGE = re.compile(r"Glance \(no auth\): (\S+)\s+starter image: (\S+)")


@dataclass
class Aio:
    state_dir: str
    api_port: int
    compute_url: str
    volume_url: str
    image_url: str
    image_id: str
    proc: subprocess.Popen
    out_path: str

    def logs(self, lines=40):
        """The aio's own output and the tail of every service log, for failure messages."""
        parts = []
        paths = [self.out_path, *sorted(glob.glob(os.path.join(self.state_dir, "logs", "*.log"))),
                 *sorted(glob.glob(os.path.join(self.state_dir, "cinder", "log", "*.log"))),
                 *sorted(glob.glob(os.path.join(self.state_dir, "glance", "log", "*.log")))]
        for path in paths:
            with contextlib.suppress(OSError), open(path, errors="replace") as f:
                tail = "".join(f.readlines()[-lines:])
            parts.append(f"==> {path} <==\n{tail}")
        return "\n".join(parts)


def _drop_leftovers(api_port):
    from tests.integration.test_aio import _drop_aio_leftovers

    _drop_aio_leftovers(api_port)


def _stop(proc):
    if proc.poll() is not None:
        return proc.returncode
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(120)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        return None


@pytest.fixture(scope="session")
def aio():
    """One ``volumesvc-aio`` on free ports with a state dir under /var/tmp."""
    state = tempfile.mkdtemp(prefix="vs-clients-", dir="/var/tmp")
    api_port, volume_port, image_port = free_port(), free_port(), free_port()
    out_path = os.path.join(state, "aio.out")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(
            [bin_path("volumesvc-aio"), "--state-dir", state, "--api-port", str(api_port),
             "--volume-port", str(volume_port), "--image-port", str(image_port),
             "--host", f"clients-{api_port}", "--no-install"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    handle = Aio(state, api_port, "", "", "", "", proc, out_path)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            with open(out_path, errors="replace") as f:
                text = f.read()
            ready = next((m for m in map(_READY.match, text.splitlines()) if m), None)
            image = _IMAGE.search(text)
            if ready and image:
                break
            if proc.poll() is not None:
                pytest.fail(f"volumesvc-aio exited with {proc.returncode} before it was "
                            f"ready:\n{handle.logs()}")
            if time.monotonic() > deadline:
                pytest.fail(f"volumesvc-aio not ready after {READY_TIMEOUT}s:\n{handle.logs()}")
            time.sleep(0.5)
        handle.compute_url, handle.volume_url = ready.group(1), ready.group(2)
        handle.image_url, handle.image_id = image.group(1), image.group(2)
        yield handle
    finally:
        rc = _stop(proc)
        shutil.rmtree(state, ignore_errors=True)
        _drop_leftovers(api_port)
    assert rc == 0, f"volumesvc-aio did not stop cleanly (exit {rc})"


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
