"""The kill-matrix tier's one deployment (tests/fixtures/killmatrix.py: ``Stack``).

Its own pytest run (``tox -e killmatrix``; in tools/dev.sh after the
in-process tiers, beside the integration tier): a real Cinder
and the three services as processes, shared by every cell of the session,
each cell on servers and volumes of its own. Never skips: a service that
cannot start fails the session with the reason.
"""

import pytest

from tests.fixtures.killmatrix import Stack


@pytest.fixture(scope="session")
def stack():
    made = Stack()
    try:
        made.start()
    except Exception as exc:  # noqa: BLE001 - any reason is a failure to report
        made.close()
        pytest.fail(f"the kill matrix's deployment did not start: {exc}")
    yield made
    made.close()
