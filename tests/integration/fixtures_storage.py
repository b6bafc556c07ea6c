"""A real one-node Ceph and a libvirtd for the integration tier (one each per session).

Fixtures (made visible to every integration test by tests/integration/conftest.py;
do not import them into another conftest, which would start a second Ceph):

* ``ceph_cluster`` (session): a running ``volumesvc_aio.ceph.CephHarness``
  (pools ``volumes`` and ``images``, ``client.cinder`` and ``client.glance``
  keyrings next to its ``ceph.conf``), started on first use (~30 s) and
  removed at the end (``VOLUMESVC_KEEP_CEPH=1`` keeps the state dir, logs in
  ``<state_dir>/log``).
* ``system_libvirt`` (session): a ``volumesvc_aio.libvirtd.LibvirtDaemon``
  serving ``qemu:///system``; stops at the end only the daemons it started.

Never skips: if Ceph cannot be installed or started, the tests using it fail
with the reason.
"""

import os
import shutil
import tempfile

import pytest

from volumesvc_aio import ceph as ceph_mod
from volumesvc_aio import libvirtd as libvirtd_mod


@pytest.fixture(scope="session")
def ceph_cluster():
    # NOTE: short path: the daemons' admin sockets live under it (108 bytes).
    harness = ceph_mod.CephHarness(tempfile.mkdtemp(prefix="vs-ceph-", dir="/var/tmp"))
    try:
        harness.setup()
    except Exception as exc:  # noqa: BLE001 - reported as the failure, never a skip
        harness.stop()
        pytest.fail(f"cannot start a one-node Ceph (logs in {harness.log_dir}): {exc}")
    yield harness
    if os.environ.get("VOLUMESVC_KEEP_CEPH"):
        harness.stop()
    else:
        harness.clean()


@pytest.fixture(scope="session")
def system_libvirt():
    state = tempfile.mkdtemp(prefix="vs-libvirtd-", dir="/var/tmp")
    daemon = libvirtd_mod.LibvirtDaemon(state)
    try:
        daemon.setup()
    except Exception as exc:  # noqa: BLE001
        daemon.stop()
        pytest.fail(f"cannot run libvirtd for qemu:///system: {exc}")
    yield daemon
    daemon.stop()  # only what this session started
    shutil.rmtree(state, ignore_errors=True)
