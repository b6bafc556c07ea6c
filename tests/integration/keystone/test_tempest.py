"""tempest 47's compute API tests pass against the keystone all-in-one.

The tests run are those of ``aio/volumesvc_aio/tempest-include-list.txt`` (all
of ``tempest.api.compute``) minus ``tempest-exclude-list.txt`` (each exclusion
names what volumesvc lacks: Neutron, SSH into guests, an image-backed root
disk upload or rebuild, or an API it does not serve). Every one of them must
pass: a failure fails this test, and so does a skip (a listed test that does
not run proves nothing). The counts are printed whatever the outcome.
"""

import os

import pytest

from volumesvc_aio import tempest

# The floor of tests the lists select: an exclusion added by mistake (a regex
# that matches more than it names) shows here, not as a quietly smaller run.
MIN_LISTED = 225


# The suite's 600 s per test is too short here: 222 tests at three workers
# took over 600 s on a loaded two-core machine. The run stops itself after
# 1800 s (TempestWorkspace.run); this leaves room for the first install too.
@pytest.mark.timeout(2400)
def test_listed_tempest_tests_all_pass(kaio, capsys):
    log = os.path.join(kaio.state_dir, "tempest-run.log")
    with open(log, "w") as out:
        returncode, totals, output, selected = tempest.run_against(kaio.state_dir, out=out)
    with capsys.disabled():
        print(f"\n{tempest.summary(totals, selected)} (output in {log})")
    assert len(selected) >= MIN_LISTED, selected
    assert returncode == 0 and totals.get("Failed", 0) == 0, output[-6000:]
    assert totals.get("Skipped", 0) == 0, output[-6000:]
    assert totals.get("Passed", 0) == len(selected), output[-6000:]
