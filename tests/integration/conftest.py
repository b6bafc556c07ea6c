"""Fixtures shared by the integration tier: real RabbitMQ, databases, ports.

Integration tests run everything as separate processes against the
machine's real services. They never skip: a missing service is a failure
with a message saying what to start.
"""

import os
import socket
import subprocess
import sys
import uuid

import pytest

from tests.integration.fixtures_openstack import (  # noqa: F401 - fixtures
    cinder_api,
    cinder_conf,
    cinder_ctx,
    cinder_harness,
    glance_harness,
)
from volumesvc.aio import rabbit

BIN = os.path.dirname(sys.executable)
PG_ADMIN_URL = os.environ.get("VOLUMESVC_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432")
MYSQL_ADMIN_URL = os.environ.get("VOLUMESVC_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")


def pytest_collection_modifyitems(items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.integration)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bin_path(name):
    return os.path.join(BIN, name)


@pytest.fixture
def rabbit_vhost():
    """A RabbitMQ virtual host of this test's own; yields its transport URL."""
    name = f"vs-test-{uuid.uuid4().hex[:8]}"
    url = rabbit.ensure_vhost(name)
    yield url
    subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, check=False)


def _server_database(admin_url, scheme_db_suffix=""):
    import sqlalchemy as sa

    name = f"vs_it_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(admin_url + "/" + scheme_db_suffix, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"cannot create a database at {admin_url}: {exc}")
    return engine, name


@pytest.fixture
def pg_database_url():
    """A fresh PostgreSQL database on 127.0.0.1:5432, dropped afterwards."""
    import sqlalchemy as sa

    engine, name = _server_database(PG_ADMIN_URL, "postgres")
    yield f"{PG_ADMIN_URL}/{name}"
    with engine.connect() as conn:
        conn.execute(sa.text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
            {"n": name})
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
    engine.dispose()
