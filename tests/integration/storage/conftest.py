"""One all-in-one with its default storage (a one-node Ceph, Cinder ``rbd`` and ``file``) per run.

Starting it costs minutes (Ceph, Cinder, Glance, a system libvirt daemon), so
the storage modules share it: each module deletes the servers and volumes it
made, and none stops a service the others need. The module-scoped fixtures
below (``aio``, ``nova``, ``cinder``, ``created``) give each module its own
clients and its own list of what to delete at its end.
"""

import pytest

from tests.integration.clients.helpers import (
    cinder_client,
    delete_server_quietly,
    delete_volume_quietly,
    nova_client,
    running_aio,
)


@pytest.fixture(scope="session")
def ceph_aio():
    """``volumesvc-aio --computes 2`` with Ceph: two computes on ``qemu:///system``."""
    with running_aio("vs-rbd-", extra_args=("--computes", "2"), storage=None) as handle:
        yield handle
    assert handle.returncode == 0, f"volumesvc-aio stopped with {handle.returncode}"


@pytest.fixture(scope="module")
def aio(ceph_aio):
    """The storage tier's shared all-in-one."""
    return ceph_aio


@pytest.fixture(scope="module")
def nova(aio):
    return nova_client(aio)


@pytest.fixture(scope="module")
def cinder(aio):
    return cinder_client(aio)


@pytest.fixture(scope="module")
def created(nova, cinder):
    """Servers and volumes the module made: whatever a failed test left is deleted at the end."""
    made = {"servers": [], "volumes": []}
    yield made
    for server_id in made["servers"]:
        delete_server_quietly(nova, server_id)
    for volume_id in made["volumes"]:
        delete_volume_quietly(cinder, volume_id)
