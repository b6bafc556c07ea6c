"""The conductor's side of ``volume_attachment cleanup``, on SQLite.

``ReconcileTask`` only routes each asked server to its compute (the compute
decides and acts, ``compute/reconcile.py``); a recording double stands in
for the compute RPC client.
"""

import oslo_messaging as messaging
import pytest

from tests.fixtures import database as db_fixtures
from volumesvc import binaries, version
from volumesvc import context as vs_context
from volumesvc.conductor.tasks import base as task_base
from volumesvc.conductor.tasks import reconcile as reconcile_task
from volumesvc.conf import get_conf
from volumesvc.db import models
from volumesvc.objects import compute_host
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import service as service_obj

UP_HOST = "cmp-up"
SILENT_HOST = "cmp-silent"
UNKNOWN_HOST = "cmp-unregistered"


class RecordingCompute:
    """Compute RPC client double: answers each server's reconciliation with its host."""

    def __init__(self):
        self.calls = []

    def reconcile_volume_attachments(self, ctxt, *, host, instances, dry_run, attachments,
                                     available_volume_ids):
        self.calls.append({"host": host, "instances": instances, "dry_run": dry_run,
                           "attachments": attachments})
        if host == SILENT_HOST:
            raise messaging.MessagingTimeout("no answer")
        return [{"instance_uuid": i["uuid"], "reconciled_on": host} for i in instances]


@pytest.fixture
def world(tmp_path):
    conf = get_conf(default_config_files=[])
    db = db_fixtures.sqlite_database(conf, str(tmp_path / "db"))
    admin = vs_context.get_admin_context()
    for host in (UP_HOST, SILENT_HOST):
        service_obj.heartbeat(db, admin, host=host, binary=binaries.COMPUTE,
                              topic="compute", version=version.SERVICE_VERSION)
    compute = RecordingCompute()
    cache = compute_host.UpCache(conf)
    deps = task_base.TaskDeps(conf, db, compute, up_cache=cache)

    def server(host):
        return instance_obj.create(db, admin, {
            "project_id": "p1", "user_id": "u1", "vm_state": "active", "host": host,
            "launched_at": models.utcnow()}).uuid

    def reconcile(uuids, **fields):
        return reconcile_task.ReconcileTask(deps, admin, instance_uuids=uuids,
                                            **fields).execute()

    return {"server": server, "reconcile": reconcile, "compute": compute, "cache": cache}


def test_one_report_per_server_in_the_order_asked(world):
    on_up = world["server"](UP_HOST)
    on_unknown = world["server"](UNKNOWN_HOST)
    hostless = world["server"](None)
    on_silent = world["server"](SILENT_HOST)
    missing = "00000000-0000-0000-0000-000000000000"

    reports = world["reconcile"]([missing, on_silent, hostless, on_unknown, on_up],
                                 dry_run=True)

    assert [r["instance_uuid"] for r in reports] == [
        missing, on_silent, hostless, on_unknown, on_up]
    assert [r.get("skipped") for r in reports] == [
        "server not found", f"compute host {SILENT_HOST} did not answer",
        "server has no host", f"compute host {UNKNOWN_HOST} is down", None]
    assert reports[4]["reconciled_on"] == UP_HOST
    assert all(r["dry_run"] for r in reports[:4])
    # Only the computes judged up were asked; a down one is not.
    assert sorted(c["host"] for c in world["compute"].calls) == [SILENT_HOST, UP_HOST]


def test_the_up_answer_is_the_conductors_shared_one(world):
    """The task asks the one host view with the conductor's UpCache, as an attach does."""
    world["reconcile"]([world["server"](UP_HOST)])

    assert world["cache"].recall(UP_HOST) is not None
    assert world["cache"].recall(UNKNOWN_HOST) is None


def test_a_listing_comes_with_each_servers_bdms(world):
    uuid = world["server"](UP_HOST)
    other = world["server"](UP_HOST)
    listing = [{"id": "att-1", "instance": uuid}, {"id": "att-2", "instance": "elsewhere"}]

    world["reconcile"]([uuid, other], attachments=listing, available_volume_ids=[])

    (call,) = world["compute"].calls
    assert call["attachments"] == [{"id": "att-1", "instance": uuid}]
    assert [i["bdms"] for i in call["instances"]] == [[], []]
