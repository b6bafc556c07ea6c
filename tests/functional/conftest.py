"""Fixtures shared by the functional tier."""

import pytest

from tests.functional.stack import Stack


@pytest.fixture
def stack(tmp_path):
    """API, conductor and one compute in this process over fake:// (stopped after)."""
    s = Stack(tmp_path)
    yield s
    s.stop()
