"""volumesvc-manage db archive_deleted_rows and db purge on SQLite, PostgreSQL and MariaDB.

A deleted server's rows (the server, its BDMs, tags, actions and their
events, faults) go to the shadow tables and then away; a live server's rows
stay; so do a deleted server a conductor still owes a volume request and a
failed attach the API still shows.
"""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from volumesvc import exception
from volumesvc.cmd import manage
from volumesvc.db import models
from volumesvc.objects import (
    attachment_status,
    block_device,
    instance,
    instance_action,
    instance_fault,
    service,
    tag,
    volume_request,
)

FLAVOR = {"flavorid": "42", "name": "m1.nano", "vcpus": 1, "memory_mb": 64, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


@pytest.fixture
def run(db, tmp_path, capsys):
    """volumesvc-manage against the test's database: (exit code, stdout)."""
    path = tmp_path / "manage.conf"
    path.write_text(f"[database]\nconnection = {db.conf.database.connection}\n")

    def run(*argv):
        code = manage.main(["--config-file", str(path), "db", *argv])
        return code, capsys.readouterr().out
    return run


def _server(db, ctx, name, *, volumes=1):
    """A server with everything that can hang off one: tags, an action with an event,
    a fault, and ``volumes`` attached volumes."""
    server = instance.create(db, ctx, {"project_id": "p1", "user_id": "u1",
                                       "display_name": name, "vm_state": "active",
                                       "host": "h1", "flavor": FLAVOR})
    tag.add(db, ctx, server.uuid, f"{name}-tag")
    request_id = f"req-{uuid.uuid4()}"
    instance_action.action_start(db, ctx, server.uuid, "create", request_id, "u1", "p1",
                                 event="compute_build_and_run_instance", host="h1")
    instance_fault.create(db, ctx, instance_uuid=server.uuid, code=500, message="boom")
    for _ in range(volumes):
        block_device.create(db, ctx, {"instance_uuid": server.uuid, "source_type": "volume",
                                      "destination_type": "volume",
                                      "volume_id": str(uuid.uuid4())})
    return server


def _rows(db, server_uuid, shadow=False):
    """Rows per table that belong to ``server_uuid`` (live tables, or their shadows)."""
    def t(name):
        return models.SHADOW_TABLES[name] if shadow else models.Base.metadata.tables[name]

    instances, bdms, tags, actions, events, faults = (
        t(n) for n in ("instances", "block_device_mappings", "tags", "instance_actions",
                       "instance_actions_events", "instance_faults"))
    counts = {
        "instances": sa.select(sa.func.count()).where(instances.c.uuid == server_uuid),
        "block_device_mappings": sa.select(sa.func.count()).where(
            bdms.c.instance_uuid == server_uuid),
        "tags": sa.select(sa.func.count()).where(tags.c.resource_id == server_uuid),
        "instance_actions": sa.select(sa.func.count()).where(
            actions.c.instance_uuid == server_uuid),
        "instance_actions_events": sa.select(sa.func.count()).where(events.c.action_id.in_(
            sa.select(actions.c.id).where(actions.c.instance_uuid == server_uuid))),
        "instance_faults": sa.select(sa.func.count()).where(
            faults.c.instance_uuid == server_uuid),
    }
    with db.get_engine().connect() as connection:
        return {name: connection.scalar(query) for name, query in counts.items()}


EVERYTHING = {"instances": 1, "block_device_mappings": 2, "tags": 1, "instance_actions": 1,
              "instance_actions_events": 1, "instance_faults": 1}
NOTHING = dict.fromkeys(EVERYTHING, 0)


def test_archive_then_purge_remove_a_deleted_servers_rows_and_nothing_else(db, ctx, run):
    gone = _server(db, ctx, "gone", volumes=2)
    live = _server(db, ctx, "live", volumes=2)
    # A volume detached from the live server long ago, and an attach that
    # failed just now (the API shows it at 2.106 for a while).
    old = block_device.list_by_instance(db, ctx, live.uuid)[1]
    block_device.destroy(db, ctx, old.uuid)
    attachment_status.record_failed_attach(db, ctx, instance_uuid=live.uuid,
                                           volume_id=str(uuid.uuid4()), bdm_uuid=None,
                                           code=500, message="attach failed")
    instance.destroy(db, ctx, gone.uuid)
    service.heartbeat(db, ctx, host="old", binary="volumesvc-compute", topic="compute",
                      version=1)
    service.destroy(db, ctx, service.get_by_host_and_binary(
        db, ctx, "old", "volumesvc-compute").uuid)
    service.heartbeat(db, ctx, host="h1", binary="volumesvc-compute", topic="compute",
                      version=1)
    live_before = _rows(db, live.uuid)

    code, out = run("archive_deleted_rows", "--verbose")
    assert code == 1, out
    assert "| instances " in out and "| instance_actions_events " in out, out
    assert _rows(db, gone.uuid) == NOTHING
    assert _rows(db, gone.uuid, shadow=True) == EVERYTHING
    # The live server keeps everything but the BDM of the long-done detach.
    kept_bdms = live_before["block_device_mappings"] - 1
    assert _rows(db, live.uuid) == dict(live_before, block_device_mappings=kept_bdms)
    assert len(block_device.list_by_instance(db, ctx, live.uuid)) == 1
    with pytest.raises(exception.BDMNotFound):
        block_device.get_by_uuid(db, ctx, old.uuid, read_deleted="yes")
    assert len(attachment_status.list_failed(db, ctx, live.uuid, ttl=3600)) == 1
    assert [s.host for s in service.list_services(db, ctx, read_deleted="yes")] == ["h1"]
    assert instance.get_by_uuid(db, ctx, live.uuid).tags == ["live-tag"]

    assert run("archive_deleted_rows", "--verbose") == (0, "Nothing was archived.\n")

    # Purging what was deleted before some time in the past purges nothing.
    code, out = run("purge", "--before", "2000-01-01", "--verbose")
    assert (code, out) == (3, "Nothing was purged.\n")
    tomorrow = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).date()
    code, out = run("purge", "--before", tomorrow.isoformat(), "--verbose")
    assert code == 0 and "| shadow_instances " in out, out
    assert _rows(db, gone.uuid, shadow=True) == NOTHING
    with db.get_engine().connect() as connection:
        for shadow in models.SHADOW_TABLES.values():
            assert connection.scalar(sa.select(sa.func.count()).select_from(shadow)) == 0
    assert _rows(db, live.uuid) == dict(live_before, block_device_mappings=kept_bdms)


def test_a_server_with_a_volume_request_still_owed_waits(db, ctx, run):
    owed = _server(db, ctx, "owed")
    request = volume_request.create(db, ctx, kind="detach", instance_uuid=owed.uuid,
                                    volume_id=str(uuid.uuid4()), params={})
    instance.destroy(db, ctx, owed.uuid)
    assert run("archive_deleted_rows")[0] == 0
    assert _rows(db, owed.uuid) == dict(EVERYTHING, block_device_mappings=1)
    volume_request.delete(db, ctx, request.uuid)
    assert run("archive_deleted_rows")[0] == 1
    assert _rows(db, owed.uuid) == NOTHING


def test_max_rows_never_splits_a_server_and_until_complete_finishes(db, ctx, run):
    servers = [_server(db, ctx, f"s{i}") for i in range(3)]
    for server in servers:
        instance.destroy(db, ctx, server.uuid)
    # One row allowed: the first server goes whole, the others wait.
    assert run("archive_deleted_rows", "--max_rows", "1")[0] == 1
    assert _rows(db, servers[0].uuid) == NOTHING
    assert _rows(db, servers[1].uuid)["instances"] == 1
    code, out = run("archive_deleted_rows", "--max_rows", "2", "--until-complete",
                    "--verbose")
    assert code == 1 and "| instances " in out and "| 2 " in out, out
    assert all(_rows(db, s.uuid) == NOTHING for s in servers[1:])
    assert _rows(db, servers[2].uuid, shadow=True) == dict(EVERYTHING,
                                                          block_device_mappings=1)
    # --purge after the archive empties the shadow tables.
    again = _server(db, ctx, "again")
    instance.destroy(db, ctx, again.uuid)
    assert run("archive_deleted_rows", "--purge")[0] == 1
    assert _rows(db, again.uuid, shadow=True) == NOTHING
    assert _rows(db, servers[0].uuid, shadow=True) == NOTHING


def test_before_keeps_rows_deleted_later(db, ctx, run):
    server = _server(db, ctx, "recent")
    instance.destroy(db, ctx, server.uuid)
    assert run("archive_deleted_rows", "--before", "2000-01-01 00:00")[0] == 0
    assert _rows(db, server.uuid)["instances"] == 1
    assert run("archive_deleted_rows", "--before", "2999-01-01T00:00:00+02:00")[0] == 1
    assert _rows(db, server.uuid) == NOTHING


def test_an_id_archived_twice_does_not_collide(db, ctx, run):
    """SQLite hands the highest id out again once its row has left the table."""
    first = _server(db, ctx, "first")
    instance.destroy(db, ctx, first.uuid)
    assert run("archive_deleted_rows")[0] == 1
    second = _server(db, ctx, "second")
    instance.destroy(db, ctx, second.uuid)
    assert run("archive_deleted_rows")[0] == 1
    assert _rows(db, second.uuid, shadow=True)["instances"] == 1


@pytest.mark.parametrize("argv, code, message", [
    (("archive_deleted_rows", "--max_rows", "0"), 2, "--max_rows must be a positive"),
    (("archive_deleted_rows", "--before", "someday"), 4, "Invalid value for --before"),
    (("purge",), 1, "Either --before or --all is required"),
    (("purge", "--before", "31/31/2020"), 2, "Invalid value for --before"),
    (("purge", "--all"), 3, ""),
], ids=["max-rows-0", "archive-bad-date", "purge-no-scope", "purge-bad-date",
        "purge-nothing"])
def test_exit_codes(run, argv, code, message):
    got, out = run(*argv)
    assert got == code and message in out, out
