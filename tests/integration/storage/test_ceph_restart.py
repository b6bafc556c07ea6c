"""A one-node Ceph started again on the same state dir keeps its data (an all-in-one restart).

Its own cluster, not the session's: it is stopped and started here.
"""

import json
import shutil
import tempfile

import pytest

from volumesvc_aio import ceph as ceph_mod

pytestmark = pytest.mark.integration


def test_the_same_cluster_starts_again_with_its_images():
    state = tempfile.mkdtemp(prefix="vs-ceph-r-", dir="/var/tmp")
    started = []
    try:
        first = ceph_mod.CephHarness(state)
        started.append(first)
        first.setup()
        fsid, mon_port = first.fsid, first.mon_v1_port
        first.cmd("rbd", "create", "--size", "8M", "volumes/kept", client="cinder")
        osds = json.loads(first.cmd("ceph", "osd", "ls", "-f", "json"))
        first.stop()

        # A new object, as a new all-in-one process would make: it reads the state dir.
        again = ceph_mod.CephHarness(state)
        started.append(again)
        again.start()
        again.wait_ready()
        assert (again.fsid, again.mon_v1_port) == (fsid, mon_port)
        assert json.loads(again.cmd("ceph", "osd", "ls", "-f", "json")) == osds
        assert json.loads(again.cmd("rbd", "ls", "volumes", "--format", "json",
                                    client="cinder")) == ["kept"]
    finally:
        for harness in started:
            harness.stop()
        shutil.rmtree(state, ignore_errors=True)
