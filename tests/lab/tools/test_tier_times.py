"""tools/tier-times.py: the modules of a JUnit report, slowest first."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "tier-times.py")

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.integration.cluster.test_faults" name="test_a" time="200.5"/>
<testcase classname="tests.integration.cluster.test_faults" name="test_b" time="40.0"/>
<testcase classname="tests.integration.storage.test_swap_real.TestSwap" name="test_c"
          time="300.0"/>
<testcase classname="tests.integration.test_aio" name="test_d" time="1.0"/>
</testsuite></testsuites>
"""


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          check=True, timeout=30).stdout


def test_modules_are_summed_and_the_slowest_come_first(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    lines = _run(str(report), "--top", "2", "--label", "integration tier").splitlines()
    assert lines[0] == "integration tier: 3 modules, 9.0 min of test time; slowest:"
    assert lines[1].split() == ["5.0", "min", "1", "tests",
                                "tests/integration/storage/test_swap_real.py"]
    assert lines[2].split() == ["4.0", "min", "2", "tests",
                                "tests/integration/cluster/test_faults.py"]
    assert len(lines) == 3


def test_a_missing_report_is_said_and_not_a_failure(tmp_path):
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "none.xml")],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "no report to read" in result.stderr


def test_reports_of_one_tier_run_as_two_runs_are_summed(tmp_path):
    first, second = tmp_path / "a.xml", tmp_path / "b.xml"
    first.write_text(REPORT)
    second.write_text(REPORT.replace("tests.integration.cluster.test_faults",
                                     "tests.integration.cluster.test_evacuate"))
    lines = _run(str(first), str(second), "--top", "9").splitlines()
    # A module in both (swap_real, aio) counts both runs' time and tests.
    assert lines[0] == "tier: 4 modules, 18.1 min of test time; slowest:"
    assert lines[1].split() == ["10.0", "min", "2", "tests",
                                "tests/integration/storage/test_swap_real.py"]
    assert {line.split()[-1] for line in lines[2:4]} == {
        "tests/integration/cluster/test_faults.py", "tests/integration/cluster/test_evacuate.py"}


def test_a_missing_report_beside_a_read_one_is_said_and_the_other_counted(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "none.xml"), str(report)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "no report to read" in result.stderr
    assert result.stdout.startswith("tier: 3 modules, 9.0 min")
