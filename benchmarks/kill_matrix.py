"""The full kill matrix: every workflow × process SIGKILLed × step, converged or not and how fast.

Runs every cell of ``tests.fixtures.killmatrix_workflows.all_cells()`` (the
kill-matrix tier runs a subset of them) on one stack: a real Cinder 29
(and a real Glance when a cell rebuilds onto an image),
the api, conductor and compute as processes, the compute on the
in-memory libvirt paused at each step by ``tests.fixtures.virt.KillPointDriver``
(createImage, which the API runs alone, paused in Cinder's or Glance's
answer by ``tests.fixtures.pausing_proxy``).
Each cell boots its own server, starts the workflow, kills the process while
the compute waits at the step, starts it again and times how long the
deployment takes, without an operator, to settle (the checks are in
``tests/fixtures/killmatrix.py``), then tries the operation a second time.
A cell that does not settle within 120 s is reported with what was still
wrong and the run goes on.

The table (one row per cell) is written to
``doc/source/contributor/kill-matrix.rst`` between its markers
(``--doc`` another file, ``--no-doc`` print only). About 30-60 s a cell on
two cores; ``--only SUBSTRING`` runs the cells whose name contains it::

    PYTHONPATH=$PWD:$PWD/aio .venv/bin/python -m benchmarks.kill_matrix
"""

import argparse
import datetime
import os
import subprocess
import sys
import time

from benchmarks.lib import kill_matrix_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "doc/source/contributor/kill-matrix.rst")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[],
                        help="run only the cells whose name contains this (repeatable)")
    parser.add_argument("--doc", default=DOC, help="the page whose table to replace")
    parser.add_argument("--no-doc", action="store_true", help="print the table only")
    args = parser.parse_args(argv)

    from tests.fixtures import killmatrix
    from tests.fixtures.killmatrix_workflows import WORKFLOWS, all_cells, stack_options

    cells = [cell for cell in all_cells()
             if not args.only or any(part in cell.name for part in args.only)]
    stack = killmatrix.Stack(**stack_options(cells))
    outcomes = []
    started = time.monotonic()
    try:
        stack.start()
        for cell in cells:
            outcome = killmatrix.outcome(stack, cell, WORKFLOWS)
            outcomes.append(outcome)
            state = f"{outcome.seconds:.1f} s" if outcome.converged else outcome.detail
            print(f"{cell.name}: {state}", flush=True)
    finally:
        stack.close()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    table = kill_matrix_report.table(outcomes)
    print(table)
    print(f"{sum(o.converged for o in outcomes)}/{len(outcomes)} cells converged in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    if not args.no_doc:
        kill_matrix_report.write(args.doc, table, commit=commit,
                                 date=datetime.date.today().isoformat(),
                                 only=args.only)
    return 0 if all(o.converged for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
