"""One all-in-one with its default storage (a one-node Ceph, Cinder ``rbd`` and ``file``) per run.

Starting it costs minutes (Ceph, Cinder, Glance, a system libvirt daemon), so
the storage modules share it: each module deletes the servers and volumes it
made, and none stops a service the others need.
"""

import pytest

from tests.integration.clients.helpers import running_aio


@pytest.fixture(scope="session")
def ceph_aio():
    """``volumesvc-aio --computes 2`` with Ceph: two computes on ``qemu:///system``."""
    with running_aio("vs-rbd-", extra_args=("--computes", "2"), storage=None) as handle:
        yield handle
    assert handle.returncode == 0, f"volumesvc-aio stopped with {handle.returncode}"
