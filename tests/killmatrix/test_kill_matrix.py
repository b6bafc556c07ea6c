"""A representative subset of the kill matrix (the whole of it: benchmarks/kill_matrix.py).

One cell per test: the workflow started, the process SIGKILLed while the
compute waits at the step, the process started again, then convergence
within two minutes with no operator and a second try of the operation
(``tests/fixtures/killmatrix.py`` says what converged means). The subset
covers each process killed at least once and each kind of wait: an RPC
call the conductor or the API waits on, Cinder's attachment the compute
waits on, a domain operation, a block copy Cinder's migration waits on,
Cinder's answer to a snapshot the API waits on alone (createImage).
Cells the matrix shows not converging yet (doc/source/contributor/kill-matrix.rst)
are not here.
"""

import pytest

from tests.fixtures.killmatrix import Cell, run_cell
from tests.fixtures.killmatrix_workflows import WORKFLOWS
from volumesvc import binaries

API, CONDUCTOR, COMPUTE = binaries.API, binaries.CONDUCTOR, binaries.COMPUTE
CELLS = [
    Cell("boot-from-volume", COMPUTE, "spawn"),
    Cell("attach-2.100", API, "connect_volume"),
    Cell("attach-2.101", CONDUCTOR, "connect_volume"),
    Cell("attach-2.101", COMPUTE, "attach_volume"),
    Cell("detach-2.101", COMPUTE, "detach_volume"),
    Cell("extend-2.105", COMPUTE, "extend_volume"),
    Cell("swap", COMPUTE, "swap_volume"),
    Cell("stop", COMPUTE, "power_off"),
    Cell("start", COMPUTE, "power_on"),
    Cell("resize", COMPUTE, "disconnect_volume"),
    Cell("resize", COMPUTE, "spawn"),
    Cell("unshelve", COMPUTE, "spawn"),
    Cell("delete", COMPUTE, "destroy"),
    # The API killed once Cinder made the first snapshot: the conductors end
    # the request and delete the snapshot no image will name.
    Cell("createImage", API, "snapshot_create"),
]


@pytest.mark.parametrize("cell", CELLS, ids=[cell.name for cell in CELLS])
def test_cell_converges_after_a_sigkill(stack, cell):
    seconds = run_cell(stack, cell, WORKFLOWS)
    # Shown with ``-rP``: the number doc/source/contributor/kill-matrix.rst records.
    print(f"{cell.name}: settled {seconds:.1f} s after the restart")
