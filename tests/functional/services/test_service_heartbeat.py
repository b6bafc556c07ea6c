"""Conductor and compute in one process over fake://: heartbeats and liveness."""

import datetime

import pytest

from tests.polling import eventually
from volumesvc import conf as vs_conf
from volumesvc import context, rpc, servicegroup, version
from volumesvc.cmd import compute as compute_cmd
from volumesvc.cmd import conductor as conductor_cmd
from volumesvc.db import api as db_api
from volumesvc.db import migration
from volumesvc.objects import service as service_obj


@pytest.fixture
def conf(tmp_path):
    conf = vs_conf.get_conf()
    conf.set_override("connection", f"sqlite:///{tmp_path}/vs.sqlite", group="database")
    conf.set_override("transport_url", "fake:/")
    conf.set_override("report_interval", 1)
    conf.set_override("service_down_time", 3)
    conf.set_override("graceful_shutdown_timeout", 5)
    conf.set_override("host", "fn-compute")
    conf.set_override("compute_driver", "fake")
    migration.upgrade(conf, "head")
    return conf


def test_compute_heartbeats_through_the_conductor(conf):
    transport = rpc.get_transport(conf)
    conductor = conductor_cmd.build_service(conf, transport=transport)
    compute = compute_cmd.build_service(conf, transport=transport)
    db = db_api.Database(conf)
    ctx = context.get_admin_context()
    conductor.start()
    try:
        compute.start()
        try:
            def compute_rows():
                return service_obj.list_services(db, ctx, binary="volumesvc-compute")

            assert eventually(lambda: compute_rows() and compute_rows()[0].report_count >= 2)
            row = compute_rows()[0]
            assert row.host == "fn-compute"
            assert row.version == version.SERVICE_VERSION
            assert row.capabilities["supports_multiattach"] is True
            assert "supports_extend_volume" in row.capabilities
            assert servicegroup.is_up(conf, row)
            conductors = service_obj.list_services(db, ctx, binary="volumesvc-conductor")
            assert [s.host for s in conductors] == ["fn-compute"]
        finally:
            compute.stop()
    finally:
        conductor.stop()


def test_a_silent_service_goes_down(conf):
    db = db_api.Database(conf)
    ctx = context.get_admin_context()
    service_obj.heartbeat(db, ctx, host="h1", binary="volumesvc-compute", topic="compute",
                          version=version.SERVICE_VERSION, capabilities={})
    row = service_obj.list_services(db, ctx, host="h1")[0]
    assert servicegroup.is_up(conf, row)
    later = row.last_seen_up + datetime.timedelta(seconds=conf.service_down_time + 1)
    assert not servicegroup.is_up(conf, row, now=later)


def test_heartbeat_survives_an_absent_conductor(conf):
    """No conductor listening: the beat times out, is logged, the service lives on."""
    conf.set_override("rpc_response_timeout", 1)
    transport = rpc.get_transport(conf)
    compute = compute_cmd.build_service(conf, transport=transport)
    assert compute.report_state() is False
