"""A 2.93 rebuild whose compute is SIGKILLed while Cinder reimages the root volume.

On the storage tier's shared all-in-one (Ceph RBD, real Cinder posting
``volume-reimaged`` to the API, QEMU on ``qemu:///system``), a compute of
the test's own (``ExtraCompute``: the all-in-one stops everything when one
of its own processes dies) rebuilds a server booted from a blank RBD volume
onto an image of random bytes, and is killed once it has let go of the root
volume's connection for Cinder (the volume ``reserved`` or
``downloading``). Started again, within two minutes and without an
operator: the server is ERROR with a fault saying the rebuild was
interrupted, the root volume ``in-use`` with exactly the attachment its BDM
names; a second rebuild then runs and the root volume holds the image's
bytes (``rbd export``), and the guest runs on it.
"""

import signal
import time

import pytest

from tests.fixtures.aio_compute import ExtraCompute
from tests.integration.clients.helpers import (
    SERVER_TIMEOUT,
    compute_http,
    delete_server_quietly,
    wait_server,
    wait_until,
    wait_volume,
)
from tests.integration.storage.proofs import (
    boot_on_host,
    live_disk_sources,
    no_leaks,
    rbd_image,
    sha256_of_rbd,
    task_state,
)
from tests.integration.storage.steps import (
    root_volume_id,
)

pytestmark = pytest.mark.integration

# The bound: the server and its root volume settle this soon after the restart.
CONVERGED_WITHIN = 120
REBUILD_TASKS = ("rebuilding", "rebuild_block_device_mapping", "rebuild_spawning")


@pytest.fixture
def rebuild_compute(aio, nova):
    compute = ExtraCompute(aio.state_dir, aio.compute_url, prefix="rebuild-kill")
    try:
        yield compute
    finally:
        compute.remove(lambda server_id: delete_server_quietly(nova, server_id))


def _rebuild(aio, server_id, image_id):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/action",
                                   {"rebuild": {"imageRef": image_id}}, version="2.93")
    assert status == 202, body


def test_a_compute_killed_during_the_reimage_ends_the_rebuild_and_keeps_the_root_volume(
        aio, nova, cinder, payload, rebuild_compute):
    image_id, digest, size = payload
    rebuild_compute.start()
    server = boot_on_host(aio, nova, rebuild_compute.host, "rebuild-kill")
    server_id, root_id = server.id, root_volume_id(server)

    _rebuild(aio, server_id, image_id)
    wait_until(lambda: cinder.volumes.get(root_id).status in ("reserved", "downloading"),
               "the root volume released for Cinder's reimage", timeout=SERVER_TIMEOUT)
    rebuild_compute.kill(signal.SIGKILL)
    assert task_state(nova, server_id) in REBUILD_TASKS

    rebuild_compute.start()
    restarted = time.monotonic()
    wait_until(lambda: nova.servers.get(server_id).status == "ERROR", "the rebuild ended",
               timeout=CONVERGED_WITHIN)
    server = nova.servers.get(server_id)
    assert task_state(nova, server_id) is None
    assert f"The rebuild of instance {server_id} was interrupted" in server.fault["message"]
    wait_volume(cinder, root_id, "in-use", timeout=CONVERGED_WITHIN)
    assert time.monotonic() - restarted < CONVERGED_WITHIN
    no_leaks(aio, cinder, server_id)
    (attached,) = cinder.volumes.get(root_id).attachments
    assert attached["server_id"] == server_id
    log = rebuild_compute.log()
    assert f"Instance {server_id} was rebuilding" in log
    assert f"Connected root volume {root_id} of {server_id} again" in log

    # Nothing was left half-made: the same rebuild goes through now.
    _rebuild(aio, server_id, image_id)
    wait_server(nova, server_id, aio=aio, timeout=4 * SERVER_TIMEOUT)
    wait_volume(cinder, root_id, "in-use")
    assert sha256_of_rbd(aio, rbd_image(cinder, root_id), size) == digest
    assert live_disk_sources(server_id)[root_id] == f"rbd:{rbd_image(cinder, root_id)}"
    no_leaks(aio, cinder, server_id)
