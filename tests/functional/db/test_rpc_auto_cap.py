"""``[upgrade_levels] compute = auto``: the cap comes from the oldest compute's service version."""

import oslo_messaging as messaging
import pytest

from tests.fixtures import database as db_fixtures
from volumesvc import binaries, context, version
from volumesvc.compute import rpcapi
from volumesvc.conf import get_conf
from volumesvc.objects import service as service_obj


@pytest.fixture
def conf_db(tmp_path):
    conf = get_conf(args=[], default_config_files=[])
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("compute", "auto", group="upgrade_levels")
    db = db_fixtures.sqlite_database(conf, str(tmp_path))
    yield conf, db
    db.dispose()


def _client(conf, db):
    cap = service_obj.compute_rpc_version_cap(conf, db, context.get_admin_context())
    api = rpcapi.ComputeAPI(conf, messaging.get_rpc_transport(conf, url="fake://"),
                            auto_version_cap=cap)
    return api._client


def _compute(db, host, service_version):
    service_obj.heartbeat(db, context.get_admin_context(), host=host,
                          binary=binaries.COMPUTE, topic="compute", version=service_version)


def test_no_compute_yet_sends_the_newest(conf_db):
    assert _client(*conf_db).version_cap is None


def test_the_oldest_compute_sets_the_cap(conf_db, monkeypatch):
    conf, db = conf_db
    # A second release whose computes speak 1.1: an old one holds the cap at 1.0.
    monkeypatch.setattr(version, "SERVICE_VERSION_HISTORY", (
        {"compute_rpc": "1.0", "conductor_rpc": "1.0"},
        {"compute_rpc": "1.1", "conductor_rpc": "1.0"}))
    _compute(db, "old", 1)
    _compute(db, "new", 2)
    assert _client(conf, db).version_cap == "1.0"
    _compute(db, "old", 2)
    assert _client(conf, db).version_cap == "1.1"


def test_a_compute_newer_than_this_code_counts_as_this_code(conf_db):
    conf, db = conf_db
    _compute(db, "future", version.SERVICE_VERSION + 5)
    assert _client(conf, db).version_cap == version.SERVICE_VERSION_HISTORY[-1]["compute_rpc"]


def test_a_pinned_version_is_kept(conf_db):
    conf, db = conf_db
    conf.set_override("compute", "1.0", group="upgrade_levels")
    _compute(db, "host", 1)
    assert service_obj.compute_rpc_version_cap(conf, db, context.get_admin_context()) is None
    assert rpcapi.ComputeAPI(conf, messaging.get_rpc_transport(conf, url="fake://"))._client \
        .version_cap == "1.0"


def test_auto_without_a_resolved_cap_is_a_clear_error(conf_db):
    conf, _ = conf_db
    with pytest.raises(ValueError, match="auto needs the database"):
        rpcapi.ComputeAPI(conf, messaging.get_rpc_transport(conf, url="fake://"))
