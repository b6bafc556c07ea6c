"""The kill-matrix tier's one deployment (tests/fixtures/killmatrix.py: ``Stack``).

Its own pytest run (``tox -e killmatrix``; in tools/dev.sh after the
in-process tiers, beside the integration tier): a real Cinder (and Glance,
with the pausing proxies, when a selected cell needs them)
and the three services as processes, shared by every cell of the session,
each cell on servers and volumes of its own. Never skips: a service that
cannot start fails the session with the reason.
"""

import pytest

from tests.fixtures.killmatrix import Stack
from tests.fixtures.killmatrix_workflows import stack_options


@pytest.fixture(scope="session")
def stack(request):
    # Glance and the pausing proxies only when a selected cell needs them.
    cells = [item.callspec.params["cell"] for item in request.session.items
             if "cell" in getattr(getattr(item, "callspec", None), "params", {})]
    made = Stack(**stack_options(cells))
    try:
        made.start()
    except Exception as exc:  # noqa: BLE001 - any reason is a failure to report
        made.close()
        pytest.fail(f"the kill matrix's deployment did not start: {exc}")
    yield made
    made.close()
