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
