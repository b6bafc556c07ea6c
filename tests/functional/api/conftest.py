"""Fixtures shared by the server update, metadata, tag and admin-action tests."""

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServerActionsWorld
from tests.functional.api.server_helpers import (
    with_flavors,
)


@pytest.fixture
def env():
    """(client, deps) of the server-actions world, its servers with a flavor.

    Test modules that define their own ``env`` keep theirs.
    """
    with fixtures.open_world(ServerActionsWorld) as (app, deps):
        with_flavors(deps)
        # The world's project already holds more servers than Nova's default
        # instance quota; these tests boot more (tests/functional/api/test_quotas.py
        # is where the quota itself is tested).
        for name in ("instances", "cores", "ram"):
            deps.conf.set_override(name, -1, group="quota")
        yield app.test_client(), deps


@pytest.fixture
def client(request):
    """A test client of a fresh copy of the world the test module imports as ``world``.

    Test modules that define their own ``client`` keep theirs.
    """
    with fixtures.open_world(request.module.world) as (app, _deps):
        yield app.test_client()
