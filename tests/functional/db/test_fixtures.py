"""The shared database fixtures and the SQLite settings of Database."""

import pytest

from tests.fixtures import database as db_fixtures
from tests.functional.db import conftest
from volumesvc.db import migration
from volumesvc.objects import flavor


def test_fresh_sqlite_database_is_migrated_and_configured(tmp_path):
    conf = conftest.make_conf(tmp_path)
    with db_fixtures.fresh_sqlite_database(conf) as db:
        assert conf.database.connection == str(db.get_engine().url)
        assert migration.version(conf, database=db) == migration.revisions()[-1]
        with db.get_engine().connect() as connection:
            pragma = connection.exec_driver_sql
            assert pragma("PRAGMA journal_mode").scalar() == "wal"
            assert pragma("PRAGMA foreign_keys").scalar() == 1
            assert pragma("PRAGMA busy_timeout").scalar() == 30000
        # None is the internal admin context.
        assert flavor.get_by_flavorid(db, None, "42").name == "m1.nano"


def test_unreachable_server_fails_unless_skipping_is_allowed(monkeypatch):
    monkeypatch.setitem(db_fixtures.ADMIN_URLS, "postgresql",
                        "postgresql+psycopg2://postgres@127.0.0.1:1/postgres")
    monkeypatch.delenv(db_fixtures.SKIP_OPPORTUNISTIC_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match="unreachable"):
        conftest.require_backend("postgresql")
    monkeypatch.setenv(db_fixtures.SKIP_OPPORTUNISTIC_ENV, "1")
    with pytest.raises(pytest.skip.Exception):
        conftest.require_backend("postgresql")
