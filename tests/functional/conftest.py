"""Fixtures shared by the functional tier."""

import pytest

from tests.fixtures.gunicorn import gunicorn  # noqa: F401 - a real gunicorn, for worker tests
from tests.functional.stack import Stack


@pytest.fixture
def stack(tmp_path):
    """API, conductor and one compute in this process over fake:// (stopped after)."""
    s = Stack(tmp_path)
    yield s
    s.stop()


@pytest.fixture
def server(stack):
    """An ACTIVE server booted from a blank 1 GiB volume on the stack's compute."""
    from tests.functional.stack import BLANK_ROOT

    uuid = stack.boot(stack.context(), BLANK_ROOT)
    stack.wait_instance(uuid, "active")
    return uuid
