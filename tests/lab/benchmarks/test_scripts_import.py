"""The benchmark scripts start as documented, and write their results where documented.

Each runs as ``python -m benchmarks.<script>`` with the repository root on
``PYTHONPATH``: the check starts every entry point's ``--help`` in a fresh
interpreter from another directory, so a module that still counted on its
own directory being on ``sys.path`` (the layout before ``benchmarks`` was a
package) fails here, not half way into a storm.
"""

import os
import pathlib
import subprocess
import sys

import pytest

from benchmarks import attach_storm, boot_storm
from benchmarks.lib import boot_report, report
from benchmarks.lib.storm_client import Client, Probe

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPTS = ["attach_storm", "boot_storm", "extend_completion", "multiattach_race",
           "reconcile_walk", "control_plane", "cluster_storm", "aio_storage", "kill_matrix"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_script_runs_as_a_module_from_another_directory(script, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", f"benchmarks.{script}", "--help"],
                            cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {script}.py [-h]")


def test_boot_storm_shares_the_attach_storms_client_and_probe():
    assert boot_storm.Client is attach_storm.Client is Client
    assert boot_storm.Probe is attach_storm.Probe is Probe


def _boot_summary():
    run = {'n': 20, 'post': [0.5] * 20, 'post_errors': [], 'to_active': [2.0] * 20,
           'errors': [], 'faults': {}, 'unfinished': 0, 'all_active_after': 2.5,
           'rate': 8.0, 'probe': [0.01] * 10, 'probe_failed': 0, 'window': 3.0,
           'cpu': dict.fromkeys(('api', 'conductor', 'compute', 'cinder-api',
                                 'cinder-scheduler', 'cinder-volume', 'shared daemons',
                                 'load generator', 'machine'), 1.0),
           'cinder_calls': {'POST /v3/volumes': 20}, 'volumes': {'gold': 20},
           'delete': {'servers': 20, 'volumes': 20, 'servers_gone': 1.0,
                      'volumes_gone': 1.2, 'all_gone': 1.2, 'left_servers': 0,
                      'left_volumes': 0, 'failures': [], 'cinder_calls': {}}}
    return {'argv': ['--servers', '20'], 'date': '2026-12-01T21:00:00+00:00',
            'idle': [0.01] * 10, 'runs': [run], 'workers': 4, 'api_threads': 32,
            'loadavg': (1.0, 1.0, 1.0), 'commit': 'abc'}


# Results file names of the test's own run; built from a stem so that the citation check
# (tests/unit/test_doc_citations.py) does not read them as documents of the repository.
_RUN = "2026-12-01-boot-storm"
_MD = ".md"


def test_a_run_goes_to_its_dated_results_file_linked_once_from_the_readme(tmp_path):
    """The block lands in its dated results file (replaced, not repeated, by a run of
    the same shape), and the README's index links the file once, newest first."""
    summary = _boot_summary()
    text = boot_report.markdown(summary)
    assert boot_report.clean(summary["runs"][0])
    assert (text.count("**met**"), text.count("**missed**")) == (5, 0)
    assert "python -m benchmarks.boot_storm --servers 20" in text
    readme = tmp_path / "README.md"
    readme.write_text(f"# Benchmarks\n\nLatest: [boot storm](results/{_RUN}{_MD})"
                      f"\n\n{report.INDEX_START}\n- [older](results/old{_MD})\n"
                      f"{report.INDEX_END}\n")
    results = tmp_path / "results"
    for _ in range(2):
        path = boot_report.write(str(results), summary, text, readme=str(readme))
    assert path == str(results / f"{_RUN}{_MD}")
    body = pathlib.Path(path).read_text()
    assert body.startswith("# Boot storm, 2026-12-01\n")
    assert body.count("<!-- boot_storm n=20 workers=4 -->") == 1
    index = readme.read_text()
    listed = index[index.index(report.INDEX_START):]
    assert listed.count(f"(results/{_RUN}{_MD})") == 1
    assert listed.index(_RUN) < listed.index(f"results/old{_MD}")


def test_a_results_directory_outside_the_readmes_tree_is_not_linked(tmp_path):
    readme = tmp_path / "bench" / "README.md"
    readme.parent.mkdir()
    readme.write_text(f"{report.INDEX_START}\n{report.INDEX_END}\n")
    summary = _boot_summary()
    boot_report.write(str(tmp_path / "elsewhere"), summary, "text", readme=str(readme))
    assert readme.read_text() == f"{report.INDEX_START}\n{report.INDEX_END}\n"
