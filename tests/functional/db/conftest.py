"""Database fixtures for the DB and object tests, on SQLite, PostgreSQL and MariaDB.

The server backends are opportunistic in the OpenStack sense but strict
here: if the server cannot be reached the test fails with the reason, unless
VOLUMESVC_TEST_SKIP_OPPORTUNISTIC=1 says skipping is acceptable.
"""

import os

import pytest

from tests.fixtures import database as db_fixtures
from volumesvc import conf as vs_conf
from volumesvc import context as vs_context

BACKEND_PARAMS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgresql),
    pytest.param("mysql", id="mysql", marks=pytest.mark.mysql),
]


def require_backend(backend):
    """Fail (or skip, when allowed) if ``backend``'s server is unreachable."""
    if backend == "sqlite":
        return
    try:
        db_fixtures.check_backend(backend)
    except db_fixtures.BackendUnavailable as exc:
        if os.environ.get(db_fixtures.SKIP_OPPORTUNISTIC_ENV) == "1":
            pytest.skip(str(exc))
        pytest.fail(str(exc), pytrace=False)


def make_conf(state_path):
    conf = vs_conf.get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", str(state_path))
    return conf


@pytest.fixture(params=BACKEND_PARAMS)
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.fixture(scope="session")
def _server_databases(tmp_path_factory):
    """One migrated database per server backend for the whole run, dropped at the end."""
    opened, stack = {}, []

    def get(backend):
        if backend not in opened:
            conf = make_conf(tmp_path_factory.mktemp(backend))
            manager = db_fixtures.server_database(conf, backend)
            opened[backend] = manager.__enter__()
            stack.append(manager)
        return opened[backend]

    yield get
    for manager in reversed(stack):
        manager.__exit__(None, None, None)


@pytest.fixture
def db(backend, tmp_path, _server_databases):
    """A migrated Database with only the default flavors in it."""
    if backend == "sqlite":
        database = db_fixtures.sqlite_database(make_conf(tmp_path), str(tmp_path / "db"))
        yield database
        database.dispose()
        return
    database = _server_databases(backend)
    db_fixtures.reset(database)
    yield database
    db_fixtures.reset(database)


@pytest.fixture
def ctx():
    return vs_context.RequestContext(user_id="fake-user", project_id="fake-project",
                                     roles=["member"], overwrite=False)
