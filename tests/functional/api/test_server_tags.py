"""Server tags over raw HTTP (2.26): every route, limits, gates, list filters, boot.

The real app on the server-actions world: 404 below 2.26, Nova's answers
(201 with Location, 204, 404), the limits (50 tags, 60 characters, no ``/``
or ``,``), the state gate, the four list filters, and tags in the server
body from 2.26 and at boot from 2.52.
"""

import threading

import pytest

from tests.functional.api.server_helpers import (
    ADMIN,
    boot_body,
    call,
    server_path,
    server_uuid,
    set_state,
)
from volumesvc import context as vs_context
from volumesvc.objects import tag as tag_obj


def _tags(deps, name="ACTIVE"):
    return tag_obj.get_all(deps.db, vs_context.get_admin_context(), server_uuid(name))


@pytest.mark.parametrize("method, suffix, body", [
    ("GET", "", None), ("PUT", "", {"tags": ["a"]}), ("DELETE", "", None),
    ("GET", "/a", None), ("PUT", "/a", None), ("DELETE", "/a", None),
])
def test_tag_routes_do_not_exist_below_2_26(env, method, suffix, body):
    client, deps = env
    status, answer, _ = call(client, method, server_path() + "/tags" + suffix, body,
                             version="2.25")
    assert status == 404, answer
    assert "itemNotFound" in answer
    assert _tags(deps) == []


def test_every_tag_route(env):
    client, deps = env
    path = server_path() + "/tags"
    v = "2.26"
    assert call(client, "GET", path, version=v)[:2] == (200, {"tags": []})
    status, body, _ = call(client, "PUT", path, {"tags": ["red", "blue", "red"]}, version=v)
    assert (status, body) == (200, {"tags": ["blue", "red"]})
    status, _, resp = call(client, "PUT", path + "/green", version=v)
    assert status == 201
    assert resp.headers["Location"].endswith(f"/servers/{server_uuid('ACTIVE')}/tags/green")
    assert call(client, "PUT", path + "/green", version=v)[0] == 204
    assert call(client, "GET", path + "/green", version=v)[0] == 204
    status, body, _ = call(client, "GET", path + "/black", version=v)
    assert status == 404 and "black" in body["itemNotFound"]["message"]
    assert call(client, "DELETE", path + "/green", version=v)[0] == 204
    assert call(client, "DELETE", path + "/green", version=v)[0] == 404
    assert _tags(deps) == ["blue", "red"]
    assert call(client, "DELETE", path, version=v)[0] == 204
    assert _tags(deps) == []


def test_tag_limits(env):
    client, deps = env
    path = server_path() + "/tags"
    v = "2.26"
    fifty = [f"t{n}" for n in range(50)]
    assert call(client, "PUT", path, {"tags": [*fifty, "t50"]}, version=v)[0] == 400
    assert call(client, "PUT", path, {"tags": fifty}, version=v)[0] == 200
    status, body, _ = call(client, "PUT", path + "/t50", version=v)
    assert status == 400 and "50" in body["badRequest"]["message"]
    # Nova's order: at the limit even a tag the server has is refused.
    assert call(client, "PUT", path + "/t0", version=v)[0] == 400
    assert call(client, "DELETE", path, version=v)[0] == 204
    for bad in ("a,b", "x" * 61):
        status, body, _ = call(client, "PUT", path + f"/{bad}", version=v)
        assert status == 400 and "is invalid" in body["badRequest"]["message"], bad
        assert call(client, "PUT", path, {"tags": [bad]}, version=v)[0] == 400
    assert call(client, "PUT", path, {"tags": [""]}, version=v)[0] == 400
    assert call(client, "PUT", path + "/" + "x" * 60, version=v)[0] == 201
    assert _tags(deps) == ["x" * 60]


@pytest.mark.parametrize("vm_state, allowed", [
    ("active", True), ("paused", True), ("suspended", True), ("stopped", True),
    ("shelved", True), ("shelved_offloaded", True), ("error", False), ("building", False),
    ("rescued", False),
])
def test_tag_changes_follow_the_state_gate_and_reads_do_not(env, vm_state, allowed):
    client, _ = env
    set_state(env[1], "ACTIVE", vm_state, None)
    path = server_path() + "/tags"
    for method, suffix, body in (("PUT", "", {"tags": ["a"]}), ("PUT", "/b", None),
                                 ("DELETE", "", None)):
        status, answer, _ = call(client, method, path + suffix, body, version="2.26")
        if allowed:
            assert status in (200, 201, 204), answer
        else:
            assert status == 409, answer
            assert vm_state in answer["conflictingRequest"]["message"]
    assert call(client, "GET", path, version="2.26")[0] == 200


def test_locked_server_keeps_accepting_tags(env):
    client, _ = env
    assert call(client, "PUT", server_path("LOCKED") + "/tags/x", version="2.26")[0] == 201


def test_another_projects_server_is_404(env):
    client, _ = env
    assert call(client, "GET", server_path("OTHER_PROJECT") + "/tags", version="2.26")[0] == 404
    assert call(client, "GET", server_path("OTHER_PROJECT") + "/tags", version="2.26",
                headers=ADMIN)[0] == 200


def test_tags_in_the_server_body_from_2_26(env):
    client, _ = env
    call(client, "PUT", server_path() + "/tags", {"tags": ["b", "a"]}, version="2.26")
    assert "tags" not in call(client, "GET", server_path(), version="2.25")[1]["server"]
    assert call(client, "GET", server_path(), version="2.26")[1]["server"]["tags"] == ["a", "b"]
    detail = call(client, "GET", "/servers/detail", version="2.26")[1]["servers"]
    assert {s["id"]: s["tags"] for s in detail}[server_uuid("ACTIVE")] == ["a", "b"]


def _ids(client, query, version="2.26"):
    status, body, _ = call(client, "GET", f"/servers?{query}", version=version)
    assert status == 200, body
    return {server["id"] for server in body["servers"]}


def test_list_filters(env):
    client, _ = env
    names = {"ACTIVE": ["a", "b"], "STOPPED": ["a"], "PAUSED": ["b", "c"]}
    for name, tags in names.items():
        call(client, "PUT", server_path(name) + "/tags", {"tags": tags}, version="2.26")
    everyone = _ids(client, "")
    ids = {name: server_uuid(name) for name in names}
    assert _ids(client, "tags=a,b") == {ids["ACTIVE"]}
    assert _ids(client, "tags=a") == {ids["ACTIVE"], ids["STOPPED"]}
    assert _ids(client, "tags-any=a,c") == set(ids.values())
    assert _ids(client, "not-tags=a,b") == everyone - {ids["ACTIVE"]}
    assert _ids(client, "not-tags-any=a,c") == everyone - set(ids.values())
    assert _ids(client, "tags=b&not-tags-any=c") == {ids["ACTIVE"]}
    # Below 2.26 the filters are not read.
    assert _ids(client, "tags=a,b", version="2.25") == everyone
    # Paging keeps working under a filter.
    status, body, _ = call(client, "GET", "/servers?tags-any=a,b,c&limit=2", version="2.26")
    assert len(body["servers"]) == 2 and "servers_links" in body


def test_tags_at_boot_from_2_52(env):
    client, deps = env
    boot = boot_body("tagged", tags=["x", "y"])
    status, body, _ = call(client, "POST", "/servers", boot, version="2.51")
    assert status == 400, body
    status, body, _ = call(client, "POST", "/servers", boot, version="2.52")
    assert status == 202, body
    uuid = body["server"]["id"]
    assert call(client, "GET", f"/servers/{uuid}/tags", version="2.52")[1] == {
        "tags": ["x", "y"]}
    boot["server"]["tags"] = [f"t{n}" for n in range(51)]
    assert call(client, "POST", "/servers", boot, version="2.52")[0] == 400


def test_concurrent_additions_stop_at_the_limit(env):
    client, deps = env
    path = server_path() + "/tags"
    call(client, "PUT", path, {"tags": [f"t{n}" for n in range(45)]}, version="2.26")
    statuses = []

    def add(n):
        statuses.append(call(client, "PUT", f"{path}/new{n}", version="2.26")[0])

    threads = [threading.Thread(target=add, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * 5 + [400] * 5
    assert len(_tags(deps)) == 50




def test_address_filters_find_no_server(env):
    """Servers have no fixed addresses: ip (and ip6 from 2.5, or for an admin) match none."""
    client, _ = env
    everyone = _ids(client, "", version="2.4")
    assert everyone
    assert _ids(client, "ip=10.0.0.1", version="2.4") == set()
    assert _ids(client, "ip6=::1", version="2.4") == everyone
    assert _ids(client, "ip6=::1", version="2.5") == set()
    status, body, _ = call(client, "GET", "/servers?ip6=::1", version="2.4", headers=ADMIN)
    assert (status, body["servers"]) == (200, [])
