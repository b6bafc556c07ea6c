"""os-migrations and /servers/{id}/migrations over raw HTTP: fields, filters, paging, abort.

The real app on the server-actions world, with migration rows written
through ``objects/migration.py`` and a compute double that records the
``live_migration_control`` casts of abort and force-complete.
"""

import datetime

import pytest

from tests.functional.api import fixtures
from tests.functional.api.fixtures import ServerActionsWorld
from tests.functional.api.server_helpers import (
    ADMIN,
    call,
    server_path,
    server_uuid,
    set_state,
    with_flavors,
)
from volumesvc import context as vs_context
from volumesvc.api import microversions as mv
from volumesvc.api.deps import Deps
from volumesvc.db import models
from volumesvc.objects import instance_action as action_obj
from volumesvc.objects import migration as migration_obj
from volumesvc.serving.app import create_app

LATEST = str(mv.MAX_VERSION)
OWNER = vs_context.RequestContext(user_id="demo", project_id=ServerActionsWorld.PROJECT,
                                  is_admin=False, roles=["member"], overwrite=False)
BASE_KEYS = {"created_at", "dest_compute", "dest_host", "dest_node", "id", "instance_uuid",
             "new_instance_type_id", "old_instance_type_id", "source_compute", "source_node",
             "status", "updated_at"}
SERVER_KEYS = {"created_at", "dest_compute", "dest_host", "dest_node", "disk_processed_bytes",
               "disk_remaining_bytes", "disk_total_bytes", "id", "memory_processed_bytes",
               "memory_remaining_bytes", "memory_total_bytes", "server_uuid",
               "source_compute", "source_node", "status", "updated_at"}


class RecordingCompute:
    """Compute rpcapi double: records the casts to the source of a migration."""

    def __init__(self):
        self.casts = []

    def live_migration_control(self, ctxt, *, host, instance_uuid, migration_id, request):
        self.casts.append({"host": host, "instance_uuid": instance_uuid,
                           "migration_id": migration_id, "request": request})


class MigrationsWorld(ServerActionsWorld):
    @classmethod
    def build_app(cls, conf, db):
        app, deps = super().build_app(conf, db)
        deps = Deps(conf, db=db, cinder=deps.cinder, glance=deps.glance,
                    conductor=deps.conductor, compute=RecordingCompute())
        return create_app(conf, deps=deps), deps


@pytest.fixture
def env():
    with fixtures.open_world(MigrationsWorld) as (app, deps):
        with_flavors(deps)
        yield app.test_client(), deps


def _migrate(deps, name="ACTIVE", *, status=migration_obj.RUNNING, source="src-1",
             dest="dst-1", migration_type=migration_obj.LIVE_MIGRATION, **values):
    """A migration row of the world's server ``name``, made by its owner."""
    return migration_obj.create(
        deps.db, OWNER, instance_uuid=server_uuid(name), status=status,
        migration_type=migration_type, source_compute=source, source_node=source,
        dest_compute=dest, dest_node=dest, dest_host="192.0.2.7", **values)


def _stamp(deps, migration, *, created=None, updated=None):
    """Set the row's times (save() stamps updated_at with now)."""
    with deps.db.writer(vs_context.get_admin_context()) as session:
        row = session.get(models.Migration, migration.id)
        if created is not None:
            row.created_at = created
        row.updated_at = updated


def _list(client, query="", version="2.1", headers=ADMIN):
    return call(client, "GET", f"/os-migrations{query}", version=version, headers=headers)


def _ids(body):
    return [m["id"] for m in body["migrations"]]


# --- GET /os-migrations ------------------------------------------------------------------


def test_fields_per_version(env):
    client, deps = env
    live = _migrate(deps, old_instance_type_id=1, new_instance_type_id=1)
    done = _migrate(deps, status=migration_obj.COMPLETED)
    status, body, _ = _list(client)
    assert status == 200, body
    assert [set(m) for m in body["migrations"]] == [BASE_KEYS, BASE_KEYS]
    first = body["migrations"][0]
    assert (first["id"], first["instance_uuid"], first["status"], first["source_compute"],
            first["dest_compute"], first["dest_host"], first["old_instance_type_id"]) == (
        live.id, server_uuid("ACTIVE"), "running", "src-1", "dst-1", "192.0.2.7", 1)
    assert first["created_at"].endswith(live.created_at.strftime(".%f"))
    assert first["updated_at"] is None
    # 2.23: the type for all, links for the in-progress live migration only.
    by_id = {m["id"]: m for m in _list(client, version="2.23")[1]["migrations"]}
    assert set(by_id[live.id]) == BASE_KEYS | {"migration_type", "links"}
    assert set(by_id[done.id]) == BASE_KEYS | {"migration_type"}
    assert by_id[live.id]["migration_type"] == "live-migration"
    assert [(link["rel"], link["href"].endswith(
        f"/servers/{server_uuid('ACTIVE')}/migrations/{live.id}"))
        for link in by_id[live.id]["links"]] == [("self", True), ("bookmark", True)]
    assert "/v2.1/" in by_id[live.id]["links"][0]["href"]
    assert "/v2.1/" not in by_id[live.id]["links"][1]["href"]
    # 2.59: uuid; 2.80: the owner.
    assert set(_list(client, version="2.59")[1]["migrations"][0]) >= {"uuid"}
    assert "user_id" not in _list(client, version="2.79")[1]["migrations"][0]
    latest = {m["id"]: m for m in _list(client, version=LATEST)[1]["migrations"]}
    assert (latest[live.id]["uuid"], latest[live.id]["user_id"],
            latest[live.id]["project_id"]) == (live.uuid, "demo", ServerActionsWorld.PROJECT)


def test_order_is_the_rows_below_2_59_and_newest_first_from_it(env):
    client, deps = env
    old, new = _migrate(deps), _migrate(deps)
    _stamp(deps, old, created=datetime.datetime(2026, 1, 2))
    _stamp(deps, new, created=datetime.datetime(2026, 1, 1))
    assert _ids(_list(client)[1]) == [old.id, new.id]
    assert _ids(_list(client, version="2.59")[1]) == [old.id, new.id]
    _stamp(deps, old, created=datetime.datetime(2025, 1, 1))
    assert _ids(_list(client, version="2.59")[1]) == [new.id, old.id]


def test_filters(env):
    client, deps = env
    a = _migrate(deps, source="h1", dest="h2")
    b = _migrate(deps, "STOPPED", source="h2", dest="h3", status=migration_obj.ERROR)
    c = _migrate(deps, "PAUSED", source="h3", dest="h1", migration_type="resize")
    for query, expected in [
            ("?host=h1", {a.id, c.id}), ("?host=h2", {a.id, b.id}),
            ("?source_compute=h2", {b.id}), ("?host=h3&source_compute=h2", {b.id, c.id}),
            ("?status=error", {b.id}), ("?status=running&status=error", {b.id}),
            (f"?instance_uuid={server_uuid('PAUSED')}", {c.id}),
            ("?migration_type=resize", {c.id}), ("?hidden=0", {a.id, b.id, c.id}),
            ("?hidden=true", set()), ("?colour=blue", {a.id, b.id, c.id})]:
        status, body, _ = _list(client, query)
        assert status == 200, (query, body)
        assert set(_ids(body)) == expected, query


def test_owner_filters_from_2_80(env):
    client, deps = env
    mine = _migrate(deps)
    other = migration_obj.create(deps.db, vs_context.get_admin_context(),
                                 instance_uuid=server_uuid("STOPPED"))
    assert set(_ids(_list(client, "?user_id=demo", version="2.80")[1])) == {mine.id}
    project = ServerActionsWorld.PROJECT
    assert set(_ids(_list(client, f"?project_id={project}", version="2.80")[1])) == {mine.id}
    assert set(_ids(_list(client, "?project_id=nobody", version="2.80")[1])) == set()
    # Unknown keys: ignored below 2.59, refused from it.
    assert set(_ids(_list(client, "?user_id=demo")[1])) == {mine.id, other.id}
    status, body, _ = _list(client, "?user_id=demo", version="2.79")
    assert status == 400 and "user_id" in body["badRequest"]["message"]


def test_paging_from_2_59(env):
    client, deps = env
    rows = [_migrate(deps) for _ in range(5)]
    for n, row in enumerate(rows):
        _stamp(deps, row, created=datetime.datetime(2026, 1, 1 + n))
    newest = [r.id for r in reversed(rows)]
    status, body, _ = _list(client, "?limit=2&status=running", version="2.59")
    assert status == 200 and _ids(body) == newest[:2]
    (link,) = body["migrations_links"]
    assert link["rel"] == "next" and f"marker={rows[3].uuid}" in link["href"]
    assert "/v2.1/os-migrations?" in link["href"] and "status=running" in link["href"]
    nxt = _list(client, f"?limit=2&marker={rows[3].uuid}", version="2.59")[1]
    assert _ids(nxt) == newest[2:4]
    last = _list(client, f"?limit=2&marker={rows[1].uuid}", version="2.59")[1]
    assert _ids(last) == newest[4:] and "migrations_links" not in last
    assert _ids(_list(client, "?limit=0", version="2.59")[1]) == []
    # [api] max_limit caps the page, and a full page gets its link.
    deps.conf.set_override("max_limit", 3, group="api")
    capped = _list(client, "?limit=10", version="2.59")[1]
    assert _ids(capped) == newest[:3] and "migrations_links" in capped
    # Below 2.59 neither paging key means anything.
    assert len(_list(client, "?limit=1&marker=x")[1]["migrations"]) == 5


@pytest.mark.parametrize("query", [
    "?marker=6a1f0d7e-33a5-4d9c-9a4e-7b1b7c1f4c00", "?limit=-1", "?limit=x",
    "?limit=1&limit=2", "?changes-since=yesterday", "?colour=blue"])
def test_bad_queries_from_2_59_are_400(env, query):
    client, _ = env
    status, body, _ = _list(client, query, version="2.59")
    assert status == 400, body
    if "marker" in query:
        assert body["badRequest"]["message"] == (
            "Marker 6a1f0d7e-33a5-4d9c-9a4e-7b1b7c1f4c00 could not be found.")


def test_changes_since_and_before(env):
    client, deps = env
    early, late, never = _migrate(deps), _migrate(deps), _migrate(deps)
    _stamp(deps, early, updated=datetime.datetime(2026, 1, 1))
    _stamp(deps, late, updated=datetime.datetime(2026, 3, 1))
    since = "?changes-since=2026-02-01T00:00:00Z"
    assert _ids(_list(client, since, version="2.59")[1]) == [late.id]
    # Below 2.59 the key is no filter; changes-before only from 2.66.
    assert len(_list(client, since)[1]["migrations"]) == 3
    before = "?changes-before=2026-02-01T00:00:00Z"
    assert _list(client, before, version="2.65")[0] == 400
    assert _ids(_list(client, before, version="2.66")[1]) == [early.id]
    both = "?changes-since=2025-12-01T00:00:00Z&changes-before=2026-04-01T00:00:00Z"
    assert set(_ids(_list(client, both, version="2.66")[1])) == {early.id, late.id}
    assert never.id not in _ids(_list(client, both, version="2.66")[1])
    status, body, _ = _list(client, "?changes-since=2026-04-01T00:00:00Z"
                            "&changes-before=2026-01-01T00:00:00Z", version="2.66")
    assert status == 400 and "changes-since" in body["badRequest"]["message"]


def test_os_migrations_is_admin_only(env):
    client, _ = env
    status, body, _ = _list(client, headers={"X-Auth-Token": "demo:demo-project"})
    assert status == 403
    assert "os_compute_api:os-migrations:index" in body["forbidden"]["message"]


# --- GET /servers/{id}/migrations[/{migration_id}] ---------------------------------------


def _server_migrations(client, name="ACTIVE", tail="", version="2.23", method="GET",
                       body=None, headers=ADMIN):
    return call(client, method, f"{server_path(name)}/migrations{tail}", body,
                version=version, headers=headers)


def test_server_migrations_list_only_in_progress_live_ones(env):
    client, deps = env
    live = _migrate(deps, memory_total=100, memory_processed=40, memory_remaining=60)
    accepted = _migrate(deps, status=migration_obj.ACCEPTED)
    _migrate(deps, status=migration_obj.COMPLETED)
    _migrate(deps, migration_type="resize")
    _migrate(deps, "STOPPED")
    status, body, _ = _server_migrations(client)
    assert status == 200, body
    assert _ids(body) == [live.id, accepted.id]
    first = body["migrations"][0]
    assert set(first) == SERVER_KEYS
    assert (first["server_uuid"], first["memory_total_bytes"], first["memory_remaining_bytes"],
            first["disk_total_bytes"]) == (server_uuid("ACTIVE"), 100, 60, None)
    assert set(_server_migrations(client, version="2.59")[1]["migrations"][0]) == \
        SERVER_KEYS | {"uuid"}
    assert set(_server_migrations(client, version=LATEST)[1]["migrations"][0]) == \
        SERVER_KEYS | {"uuid", "user_id", "project_id"}


def test_server_migration_show_and_its_404s(env):
    client, deps = env
    live = _migrate(deps)
    status, body, _ = _server_migrations(client, tail=f"/{live.id}")
    assert status == 200 and set(body["migration"]) == SERVER_KEYS
    assert body["migration"]["id"] == live.id
    uuid = server_uuid("ACTIVE")
    done = _migrate(deps, status=migration_obj.COMPLETED)
    resize = _migrate(deps, migration_type="resize")
    other = _migrate(deps, "STOPPED")
    for tail, message in [
            (f"/{done.id}", f"Live migration {done.id} for server {uuid} is not in progress."),
            (f"/{resize.id}", f"Migration {resize.id} for server {uuid} is not "
                              "live-migration."),
            (f"/{other.id}", f"In-progress live migration {other.id} is not found for "
                             f"server {uuid}."),
            ("/abc", f"In-progress live migration abc is not found for server {uuid}."),
            ("/99999999999999999999", None)]:
        status, body, _ = _server_migrations(client, tail=tail)
        assert status == 404, (tail, body)
        if message:
            assert body["itemNotFound"]["message"] == message


def test_server_migrations_need_2_23_and_an_admin(env):
    client, deps = env
    live = _migrate(deps)
    assert _server_migrations(client, version="2.22")[0] == 404
    assert _server_migrations(client, tail=f"/{live.id}", version="2.22")[0] == 404
    owner = {"X-Auth-Token": "demo:demo-project"}
    for tail, rule in (("", "index"), (f"/{live.id}", "show")):
        status, body, _ = _server_migrations(client, tail=tail, headers=owner)
        assert status == 403, body
        assert f"os_compute_api:servers:migrations:{rule}" in body["forbidden"]["message"]
    # Another project's server is not found for a non-admin, before any policy.
    assert _server_migrations(client, "OTHER_PROJECT", headers=owner)[0] == 404
    # Unknown query keys: ignored until 2.102.
    assert _server_migrations(client, tail="?colour=blue", version="2.101")[0] == 200
    assert _server_migrations(client, tail="?colour=blue", version="2.102")[0] == 400


# --- DELETE /servers/{id}/migrations/{migration_id} (abort) ------------------------------


def _migrating(deps, name="ACTIVE"):
    set_state(deps, name, "active", "migrating")


def _actions(deps, name="ACTIVE"):
    return [a.action for a in action_obj.list_actions(
        deps.db, vs_context.get_admin_context(), server_uuid(name))]


def _refused_until_migrating(deps, send, action):
    """``send()`` is a 409 naming ``action`` while the server has no task; then migrating."""
    status, body, _ = send()
    assert status == 409
    assert body["conflictingRequest"]["message"] == (
        f"Cannot '{action}' instance {server_uuid('ACTIVE')} while it is in task_state None")
    _migrating(deps)


def _abort(client, migration_id, version="2.24", headers=ADMIN):
    return _server_migrations(client, tail=f"/{migration_id}", version=version,
                              method="DELETE", headers=headers)


@pytest.mark.parametrize("status, allowed_at", [
    (migration_obj.ACCEPTED, "2.65"), (migration_obj.QUEUED, "2.65"),
    (migration_obj.PREPARING, "2.65"), (migration_obj.RUNNING, "2.24"),
    (migration_obj.POST_MIGRATING, None), (migration_obj.COMPLETED, None),
    (migration_obj.ERROR, None)])
def test_abort_states_per_version(env, status, allowed_at):
    client, deps = env
    _migrating(deps)
    migration = _migrate(deps, status=status)
    for version in ("2.24", "2.64", "2.65", LATEST):
        allowed = allowed_at is not None and mv.parse(version) >= mv.parse(allowed_at)
        code, body, _ = _abort(client, migration.id, version=version)
        if allowed:
            assert code == 202, (version, body)
            return
        assert code == 400, (version, body)
        assert (f"Migration {migration.id} state of instance {server_uuid('ACTIVE')} is "
                f"{status}. Cannot abort live migration") in body["badRequest"]["message"]
        assert migration_obj.get(deps.db, OWNER, migration.id).requested is None
    assert deps.compute.casts == []


def test_abort_refusals(env):
    client, deps = env
    live = _migrate(deps)
    assert _abort(client, live.id, version="2.23")[0] == 404
    # The server must be migrating (409, Nova's message).
    _refused_until_migrating(deps, lambda: _abort(client, live.id), "abort live migration")
    resize = _migrate(deps, migration_type="resize")
    status, body, _ = _abort(client, resize.id)
    assert status == 400 and "is not live-migration" in body["badRequest"]["message"]
    other = _migrate(deps, "STOPPED")
    status, body, _ = _abort(client, other.id)
    assert status == 404
    assert body["itemNotFound"]["message"] == (
        f"Migration {other.id} not found for instance {server_uuid('ACTIVE')}")
    assert _abort(client, "abc")[0] == 404
    status, body, _ = _abort(client, live.id, headers={"X-Auth-Token": "demo:demo-project"})
    assert status == 403 and "servers:migrations:delete" in body["forbidden"]["message"]
    assert deps.compute.casts == []


def test_abort_without_a_source_compute_only_records_the_request(env):
    client, deps = env
    _migrating(deps)
    accepted = _migrate(deps, status=migration_obj.ACCEPTED, source=None)
    assert _abort(client, accepted.id, version="2.65")[0] == 202
    assert migration_obj.get(deps.db, OWNER, accepted.id).requested == migration_obj.ABORT
    assert deps.compute.casts == []


# --- POST /servers/{id}/migrations/{migration_id}/action (force_complete) ----------------


def _force(client, migration_id, body=None, version="2.22", headers=ADMIN):
    return _server_migrations(client, tail=f"/{migration_id}/action", version=version,
                              method="POST", body=body or {"force_complete": None},
                              headers=headers)


def test_force_complete_refusals(env):
    client, deps = env
    live = _migrate(deps)
    assert _force(client, live.id, version="2.21")[0] == 404
    _refused_until_migrating(deps, lambda: _force(client, live.id), "force_complete")
    set_state(deps, "ACTIVE", "paused", "migrating")
    status, body, _ = _force(client, live.id)
    assert status == 409 and "vm_state paused" in body["conflictingRequest"]["message"]
    _migrating(deps)
    for status_ in (migration_obj.QUEUED, migration_obj.POST_MIGRATING):
        other = _migrate(deps, status=status_)
        code, body, _ = _force(client, other.id, version=LATEST)
        assert code == 400, body
        assert f"is {status_}. Cannot force complete" in body["badRequest"]["message"]
    # A migration of another server is a 400, as in Nova.
    elsewhere = _migrate(deps, "STOPPED")
    status, body, _ = _force(client, elsewhere.id)
    assert status == 400 and "not found for instance" in body["badRequest"]["message"]
    for bad in ({"force_complete": {}}, {"abort": None}, {"force_complete": None, "x": 1}):
        assert _force(client, live.id, body=bad)[0] == 400, bad
    status, body, _ = _force(client, live.id, headers={"X-Auth-Token": "demo:demo-project"})
    assert status == 403 and "force_complete" in body["forbidden"]["message"]
    assert deps.compute.casts == []


# --- both: what an accepted request leaves behind ----------------------------------------


@pytest.mark.parametrize("send, requested, action", [
    (_abort, migration_obj.ABORT, "live_migration_cancel"),
    (_force, migration_obj.FORCE_COMPLETE, "live_migration_force_complete"),
], ids=["abort", "force-complete"])
def test_a_request_on_a_running_live_migration(env, send, requested, action):
    """202 without a body; ``requested`` written, the source woken, the action recorded."""
    client, deps = env
    _migrating(deps)
    live = _migrate(deps)
    status, body, resp = send(client, live.id)
    assert status == 202, body
    assert resp.data == b""
    assert migration_obj.get(deps.db, OWNER, live.id).requested == requested
    assert deps.compute.casts == [{"host": "src-1", "instance_uuid": server_uuid("ACTIVE"),
                                   "migration_id": live.id, "request": requested}]
    assert action in _actions(deps)
