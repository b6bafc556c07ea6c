"""tempest's two-compute tests pass against the cluster.

The all-in-one has one compute, so tempest skips (and the project's tempest
run excludes) its live-migration tests. The cluster's computes each have a
libvirt daemon of their own, as production hosts do: here tempest 47 live
migrates volume-backed servers between them, through HAProxy on TLS, with
Keystone and its dynamic credentials, exactly the tests of
``aio/volumesvc_aio/tempest-cluster-include-list.txt``. Every listed test
must pass; a skip fails (it would prove nothing).
"""

import os

import pytest

from volumesvc_aio import tempest


@pytest.mark.timeout(1500)
def test_listed_two_compute_tempest_tests_all_pass(api, cluster, capsys):
    log = os.path.join(cluster.state_dir, "tempest-run.log")
    with open(log, "w") as out:
        returncode, totals, output, selected = tempest.run_against(
            cluster.state_dir, out=out, include_list=tempest.CLUSTER_INCLUDE_LIST,
            exclude_list=None, concurrency=2, compute_nodes=len(cluster.hosts),
            features=tempest.CLUSTER_FEATURES, ca_file=cluster.ca_file)
    with capsys.disabled():
        print(f"\n{tempest.summary(totals, selected)} (output in {log})")
    assert len(selected) == 4, selected
    assert returncode == 0 and totals.get("Failed", 0) == 0, output[-6000:]
    assert totals.get("Skipped", 0) == 0, output[-6000:]
    assert totals.get("Passed", 0) == len(selected), output[-6000:]
