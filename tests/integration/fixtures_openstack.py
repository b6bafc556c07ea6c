"""A real Cinder 29 for the integration tier (one per test session).

Fixtures (made visible to every integration test by tests/integration/conftest.py;
do not import them into another conftest, which would start a second Cinder):

* ``cinder_harness`` (session): a running ``volumesvc_aio.cinder.CinderHarness``
  on a free port, with its own RabbitMQ vhost, its own MariaDB database
  (SQLite gives Cinder "database is locked" as soon as a delete and a create
  overlap) and a state dir under /var/tmp (volume files are real sparse files
  there, QEMU can open them). Stopped,
  vhost and state removed at the end (``VOLUMESVC_KEEP_CINDER=1`` keeps the
  state dir for post-mortems; logs are in ``<state_dir>/log``).
* ``glance_harness`` (session): a running ``GlanceHarness`` (no keystone, file
  store); the Cinder above is pointed at it, so volumes from images work.
* ``cinder_api`` (session): a ``CinderAPI`` in noauth mode pointed at it.
* ``cinder_ctx``: a RequestContext whose project Cinder can route.
* ``wait_volume_status(api, ctx, volume_id, status, size=None)``: helper.

Never skips: if Cinder cannot be installed or started, the session fails
with the reason and the last log lines.
"""

import os
import shutil
import tempfile
import time
import uuid

import pytest

from volumesvc.conf import get_conf
from volumesvc.context import RequestContext
from volumesvc.volume.cinder import CinderAPI
from volumesvc_aio import free_port, rabbit
from volumesvc_aio.cinder import CinderHarness
from volumesvc_aio.glance import GlanceHarness

START_TIMEOUT = 180
MYSQL_ADMIN_URL = os.environ.get("VOLUMESVC_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306")


def _mysql(statement):
    import sqlalchemy as sa

    engine = sa.create_engine(MYSQL_ADMIN_URL + "/", isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(statement))
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def glance_harness():
    state_dir = tempfile.mkdtemp(prefix="volumesvc-it-glance-", dir="/var/tmp")
    harness = GlanceHarness(state_dir, port=free_port())
    try:
        harness.setup(START_TIMEOUT)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"Glance could not be installed or started: {e}")
    yield harness
    harness.stop()
    if not os.environ.get("VOLUMESVC_KEEP_CINDER"):
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def cinder_harness(glance_harness):
    vhost = f"vs-it-cinder-{uuid.uuid4().hex[:8]}"
    state_dir = tempfile.mkdtemp(prefix="volumesvc-it-cinder-", dir="/var/tmp")
    try:
        transport_url = rabbit.ensure_vhost(vhost)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"RabbitMQ vhost {vhost} could not be created: {e}")
    db_name = f"vs_it_cinder_{uuid.uuid4().hex[:8]}"
    try:
        _mysql(f"CREATE DATABASE {db_name} CHARACTER SET utf8mb4")
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"cannot create a MariaDB database at {MYSQL_ADMIN_URL}: {e}")
    harness = CinderHarness(state_dir, port=free_port(), transport_url=transport_url,
                            database_connection=f"{MYSQL_ADMIN_URL}/{db_name}?charset=utf8mb4",
                            glance_url=glance_harness.url,
                            # NOTE: one Cinder serves the whole session; Cinder's
                            # default of 10 volumes per project ran out once the
                            # suite grew past it (413 VolumeLimitExceeded).
                            default_quotas={"volumes": -1, "snapshots": -1,
                                            "gigabytes": -1})
    try:
        harness.install()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"Cinder could not be installed (needs PyPI access): {e}")
    try:
        harness.configure()
        harness.start()
        harness.wait_ready(START_TIMEOUT)
    except Exception as e:  # noqa: BLE001
        harness.stop()
        pytest.fail(f"Cinder did not start: {e}")
    yield harness
    harness.stop()
    rabbit.delete_vhost(vhost)
    _mysql(f"DROP DATABASE IF EXISTS {db_name}")
    if not os.environ.get("VOLUMESVC_KEEP_CINDER"):
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def cinder_conf(cinder_harness):
    conf = get_conf()
    conf.set_override("auth_strategy", "noauth", "cinder")
    conf.set_override("endpoint_override", cinder_harness.url, "cinder")
    return conf


@pytest.fixture(scope="session")
def cinder_api(cinder_conf):
    return CinderAPI(cinder_conf)


@pytest.fixture
def cinder_ctx():
    # Cinder routes only hex/dash project ids in URLs.
    return RequestContext(user_id="it-user", project_id=uuid.uuid4().hex)


def wait_volume_status(api, ctx, volume_id, status, size=None, timeout=60):
    """Poll until the volume has ``status`` (and ``size``); fail on error states."""
    deadline = time.monotonic() + timeout
    while True:
        volume = api.get(ctx, volume_id)
        if volume["status"] == status and (size is None or volume["size"] == size):
            return volume
        if volume["status"].startswith("error") or time.monotonic() > deadline:
            pytest.fail(f"volume {volume_id} is {volume['status']} (size {volume['size']}), "
                        f"wanted {status} (size {size})")
        time.sleep(0.3)
