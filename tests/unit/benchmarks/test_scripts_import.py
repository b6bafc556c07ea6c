"""The benchmark scripts start as documented: ``python benchmarks/<script>.py``.

Regression: after the test doubles moved to ``tests/fixtures``, the storm
stack imported ``tests`` but the script only put ``benchmarks/`` on its path,
so the documented command died with ``No module named 'tests'`` before the
first storm. The check runs the script's own path set-up in a fresh
interpreter from another directory, with no PYTHONPATH, and imports the stack.
"""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_attach_storm_imports_its_stack_from_any_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import runpy, sys; sys.argv = ['attach_storm.py'];"
            f"g = runpy.run_path({str(ROOT / 'benchmarks' / 'attach_storm.py')!r},"
            " run_name='not_main');"
            "import storm_stack; print(storm_stack.Stack.__name__)")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Stack"


def test_boot_storm_imports_attach_storms_helpers_and_renders_a_report(tmp_path):
    """boot_storm.py reuses attach_storm's Client/Probe (imported, not copied)
    and its report names every goal as met or missed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = f"""
import runpy, sys
sys.argv = ['boot_storm.py']
g = runpy.run_path({str(ROOT / 'benchmarks' / 'boot_storm.py')!r}, run_name='not_main')
import attach_storm, boot_report
assert g['Client'] is attach_storm.Client and g['Probe'] is attach_storm.Probe
run = {{'n': 20, 'post': [0.5] * 20, 'post_errors': [], 'to_active': [2.0] * 20,
        'errors': [], 'faults': {{}}, 'unfinished': 0, 'all_active_after': 2.5,
        'rate': 8.0, 'probe': [0.01] * 10, 'probe_failed': 0, 'window': 3.0,
        'cpu': dict.fromkeys(('api', 'conductor', 'compute', 'cinder-api',
                              'cinder-scheduler', 'cinder-volume', 'shared daemons',
                              'load generator', 'machine'), 1.0),
        'cinder_calls': {{'POST /v3/volumes': 20}}, 'volumes': {{'gold': 20}},
        'delete': {{'servers': 20, 'volumes': 20, 'servers_gone': 1.0, 'volumes_gone': 1.2,
                   'all_gone': 1.2, 'left_servers': 0, 'left_volumes': 0, 'failures': [],
                   'cinder_calls': {{}}}}}}
summary = {{'argv': ['--servers', '20'], 'date': 'today', 'idle': [0.01] * 10, 'runs': [run],
           'workers': 4, 'api_threads': 32, 'loadavg': (1.0, 1.0, 1.0), 'commit': 'abc'}}
text = boot_report.markdown(summary)
assert boot_report.clean(run)
print(text.count('**met**'), text.count('**missed**'))
readme = {str(tmp_path / 'README.md')!r}
open(readme, 'w').write('# Benchmarks\\n\\n## Results\\n')
boot_report.update_readme(readme, summary, text)
boot_report.update_readme(readme, summary, text)
body = open(readme).read()
assert body.count('<!-- boot_storm n=20 workers=4 -->') == 1 and '## boot_storm.py' in body
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5", "0"]
