"""tools/dev.sh's run_tiers: every pytest run it starts counts, and it says how long each took.

The function runs against a virtualenv whose ``pytest`` only records its
arguments, writes the JUnit report it is asked for and exits with the
status a test chose for it, so what is checked is the shell's logic: which
runs start, with which arguments, and what the command's exit status and
last lines are.
"""

import os
import pathlib
import stat
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

#: One test of one module, a minute long.
REPORT = ('<testsuites><testsuite><testcase classname="tests.integration.x.test_y" '
          'name="t" time="60"/></testsuite></testsuites>')

FAKE_PYTEST = """#!/bin/bash
echo "$*" >> "$FAKE_CALLS"
for arg in "$@"; do
    case "$arg" in
        --junitxml=*) printf '%s' "$FAKE_REPORT" > "${arg#--junitxml=}" ;;
    esac
done
for arg in "$@"; do
    case " $FAKE_FAILING " in *" $arg "*) echo "FAILED $arg::test - boom"; exit 1 ;; esac
done
echo "1 passed"
"""


@pytest.fixture
def venv(tmp_path):
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    pytest_path = bin_dir / "pytest"
    pytest_path.write_text(FAKE_PYTEST)
    pytest_path.chmod(pytest_path.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "python").symlink_to(subprocess.run(
        ["bash", "-c", "command -v python3"], capture_output=True, text=True,
        check=True).stdout.strip())
    return tmp_path / "venv"


def _run_tiers(tmp_path, venv, failing="", side=None):
    calls = tmp_path / "calls"
    env = dict(os.environ, FAKE_CALLS=str(calls), FAKE_FAILING=failing, FAKE_REPORT=REPORT,
               VOLUMESVC_VENV=str(venv))
    if side is not None:
        env["VOLUMESVC_INTEGRATION_SIDE"] = side
    result = subprocess.run(["bash", "-c", "source tools/dev.sh && run_tiers"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    return result, calls.read_text().splitlines()


def test_every_tier_runs_and_the_times_are_said(tmp_path, venv):
    result, calls = _run_tiers(tmp_path, venv)
    assert result.returncode == 0, result.stderr
    runs = [" ".join(a for a in call.split() if a.startswith("tests/") or a == "-n")
            for call in calls]
    assert sorted(runs) == sorted(["-n tests/functional", "tests/fuzz tests/lab tests/unit",
                                   "tests/killmatrix", "tests/integration"])
    assert "background runs (fast = fuzz, lab and unit): functional 0 min" in result.stderr
    assert "killmatrix 0 min" in result.stderr
    assert "integration tier: 1 modules" in result.stdout + result.stderr


@pytest.mark.parametrize("failing", ["tests/functional", "tests/unit", "tests/killmatrix",
                                     "tests/integration"])
def test_a_failing_run_fails_the_command(tmp_path, venv, failing):
    result, _ = _run_tiers(tmp_path, venv, failing=failing)
    assert result.returncode == 1, result.stderr


def test_the_side_packages_run_beside_the_rest_and_count(tmp_path, venv):
    side = "tests/integration/cluster"
    result, calls = _run_tiers(tmp_path, venv, failing=side, side=side)
    assert result.returncode == 1, result.stderr
    rest = [c for c in calls if c.endswith(" tests/integration")]
    assert len(rest) == 1 and f"--ignore={side}" in rest[0]
    assert any(c.endswith(f" {side}") for c in calls)
    assert f"why the integration run of {side} failed" in result.stderr
