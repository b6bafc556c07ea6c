"""PUT /servers/{id} and /servers/{id}/metadata over raw HTTP: windows, limits, gates.

The real app on the server-actions world: what each microversion accepts in
an update and answers with, the 2.94 hostname rules, every metadata route
with Nova's faults (404 key, 400 mismatch, 403 past 128 items, 409 locked
or in a state that refuses it), and metadata at boot.
"""

import threading

import pytest

from tests.functional.api.server_helpers import (
    ADMIN,
    boot_body,
    call,
    instance_of,
    server_path,
    server_uuid,
    set_state,
)
from volumesvc import context as vs_context
from volumesvc.api import microversions as mv
from volumesvc.api.handlers.server_metadata import MAX_METADATA_ITEMS
from volumesvc.api.views import servers as server_views
from volumesvc.objects import instance as instance_obj

# ``env`` (conftest.py): the server-actions world with these flavors.


# --- PUT /servers/{id} ------------------------------------------------------------

def test_update_renames_and_answers_the_server(env):
    client, deps = env
    status, body, _ = call(client, "PUT", server_path(), {"server": {
        "name": "renamed", "accessIPv4": "192.0.2.7", "accessIPv6": "0:0::1"}})
    assert status == 200, body
    assert body["server"]["name"] == "renamed"
    assert body["server"]["accessIPv4"] == "192.0.2.7"
    assert body["server"]["accessIPv6"] == "::1"
    instance = instance_of(deps)
    assert (instance.display_name, instance.access_ip_v4) == ("renamed", "192.0.2.7")


@pytest.mark.parametrize("version, key, value", [
    ("2.18", "description", "d"),
    ("2.89", "hostname", "host-1"),
    ("2.103", "pinned_availability_zone", None),
])
def test_update_refuses_a_key_below_its_version(env, version, key, value):
    client, _ = env
    status, body, _ = call(client, "PUT", server_path(), {"server": {key: value}}, version=version)
    assert status == 400, body
    assert key in body["badRequest"]["message"]


def test_description_from_2_19_and_null_clears_it(env):
    client, deps = env
    status, body, _ = call(client, "PUT", server_path(), {"server": {"description": "web"}},
                           version="2.19")
    assert (status, body["server"]["description"]) == (200, "web")
    status, body, _ = call(client, "PUT", server_path(), {"server": {"description": None}},
                           version="2.19")
    assert (status, body["server"]["description"]) == (200, None)
    assert instance_of(deps).display_description is None


def test_hostname_from_2_90_is_one_label_of_at_most_63(env):
    client, deps = env
    status, body, _ = call(client, "PUT", server_path(), {"server": {"hostname": "web-1"}},
                           version="2.90")
    assert status == 200, body
    assert body["server"]["OS-EXT-SRV-ATTR:hostname"] == "web-1"
    assert instance_of(deps).hostname == "web-1"
    for bad in ("a" * 64, "-web", "web_", "x", "a b"):
        status, body, _ = call(client, "PUT", server_path(), {"server": {"hostname": bad}},
                               version="2.93")
        assert status == 400, (bad, body)


def test_fqdn_hostname_from_2_94(env):
    client, deps = env
    fqdn = ".".join(["a" * 60] * 4) + ".example.org"
    assert 63 < len(fqdn) <= 255
    status, body, _ = call(client, "PUT", server_path(), {"server": {"hostname": fqdn}},
                           version="2.93")
    assert status == 400, body
    status, body, _ = call(client, "PUT", server_path(), {"server": {"hostname": fqdn}},
                           version="2.94")
    assert status == 200, body
    assert instance_of(deps).hostname == fqdn
    status, body, _ = call(client, "PUT", server_path(), {"server": {"hostname": "a" * 256}},
                           version="2.94")
    assert status == 400, body


def test_fqdn_hostname_at_boot_from_2_94(env):
    client, deps = env
    hostname = "web-1.example.org" + ".x" * 30
    boot = boot_body("fq", hostname=hostname)
    status, body, _ = call(client, "POST", "/servers", boot, version="2.93")
    assert status == 400, body
    status, body, _ = call(client, "POST", "/servers", boot, version="2.94")
    assert status == 202, body
    assert instance_obj.get_by_uuid(deps.db, vs_context.get_admin_context(),
                                    body["server"]["id"]).hostname == hostname


def test_update_answer_is_cut_below_2_75_and_whole_from_it(env):
    client, _ = env
    _, cut, _ = call(client, "PUT", server_path(), {"server": {}}, version="2.74")
    _, whole, _ = call(client, "PUT", server_path(), {"server": {}}, version="2.75")
    _, shown, _ = call(client, "GET", server_path(), version="2.75")
    for key in ("OS-EXT-STS:vm_state", "key_name", "os-extended-volumes:volumes_attached",
                "OS-EXT-AZ:availability_zone", "config_drive"):
        assert key not in cut["server"] and key in whole["server"]
    assert cut["server"]["locked_reason"] is None
    assert set(whole["server"]) == set(shown["server"])


def test_update_admin_sees_extended_attributes_only_from_2_75(env):
    client, _ = env
    _, cut, _ = call(client, "PUT", server_path(), {"server": {}}, version="2.74", headers=ADMIN)
    _, whole, _ = call(client, "PUT", server_path(), {"server": {}}, version="2.75", headers=ADMIN)
    assert not [k for k in cut["server"] if k.startswith("OS-EXT-SRV-ATTR:")]
    assert "OS-EXT-SRV-ATTR:host" in whole["server"]


def test_update_is_allowed_on_a_locked_server_and_refused_for_another_project(env):
    client, _ = env
    status, _, _ = call(client, "PUT", server_path("LOCKED"), {"server": {"name": "x"}})
    assert status == 200
    status, body, _ = call(client, "PUT", server_path("OTHER_PROJECT"), {"server": {"name": "x"}})
    assert status == 404, body


def test_pinned_availability_zone_2_104(env):
    client, deps = env
    ctx = vs_context.get_admin_context()
    instance_obj.save(deps.db, ctx, server_uuid("ACTIVE"), {"availability_zone": "nova"})
    status, body, _ = call(client, "PUT", server_path(), {"server": {
        "pinned_availability_zone": None}}, version="2.104")
    assert status == 200, body
    assert body["server"]["pinned_availability_zone"] is None
    status, body, _ = call(client, "PUT", server_path(), {"server": {
        "pinned_availability_zone": "elsewhere"}}, version="2.104")
    assert status == 400, body
    assert "elsewhere" in body["badRequest"]["message"]


def test_update_response_windows_match_the_show_rows():
    windows = dict(server_views.update_windows(lambda item, version: item))
    assert mv.V2_75_STRICT_QUERY in windows
    below = windows[mv.V2_73_LOCK_REASON]
    assert "OS-EXT-STS:vm_state" not in below["properties"]
    assert "OS-EXT-STS:vm_state" in windows[mv.V2_75_STRICT_QUERY]["properties"]


# --- metadata ------------------------------------------------------------------

def test_metadata_routes_merge_replace_show_update_delete(env):
    client, deps = env
    path = server_path() + "/metadata"
    assert call(client, "GET", path)[:2] == (200, {"metadata": {}})
    status, body, _ = call(client, "POST", path, {"metadata": {"a": "1", "b": "2"}})
    assert (status, body) == (200, {"metadata": {"a": "1", "b": "2"}})
    status, body, _ = call(client, "POST", path, {"metadata": {"b": "3", "c": "4"}})
    assert body == {"metadata": {"a": "1", "b": "3", "c": "4"}}
    assert call(client, "GET", path + "/b")[:2] == (200, {"meta": {"b": "3"}})
    status, body, _ = call(client, "PUT", path + "/d", {"meta": {"d": "5"}})
    assert (status, body) == (200, {"meta": {"d": "5"}})
    status, body, _ = call(client, "PUT", path, {"metadata": {"z": "9"}})
    assert (status, body) == (200, {"metadata": {"z": "9"}})
    assert call(client, "DELETE", path + "/z")[0] == 204
    assert instance_of(deps).metadata == {}
    status, body, _ = call(client, "GET", server_path(), version="2.1")
    assert body["server"]["metadata"] == {}


def test_metadata_faults(env):
    client, _ = env
    path = server_path() + "/metadata"
    status, body, _ = call(client, "GET", path + "/nope")
    assert (status, body["itemNotFound"]["message"]) == (404, "Metadata item was not found")
    assert call(client, "DELETE", path + "/nope")[0] == 404
    status, body, _ = call(client, "PUT", path + "/a", {"meta": {"b": "1"}})
    assert (status, body["badRequest"]["message"]) == (400, "Request body and URI mismatch")
    assert call(client, "PUT", path + "/a", {"meta": {"a": "1", "b": "2"}})[0] == 400
    assert call(client, "PUT", path + "/a", {"meta": {}})[0] == 400
    assert call(client, "POST", path, {"metadata": {"k": "v" * 256}})[0] == 400
    assert call(client, "POST", path, {"metadata": {"k" * 256: "v"}})[0] == 400
    assert call(client, "POST", path, {"metadata": {"k": 1}})[0] == 400
    assert call(client, "POST", path, {"meta": {"k": "v"}})[0] == 400
    assert call(client, "GET", server_path("OTHER_PROJECT") + "/metadata")[0] == 404


def test_metadata_count_limit_is_a_403_and_counts_the_merge(env):
    client, deps = env
    path = server_path() + "/metadata"
    full = {f"k{n}": "v" for n in range(MAX_METADATA_ITEMS)}
    assert call(client, "PUT", path, {"metadata": full})[0] == 200
    status, body, _ = call(client, "POST", path, {"metadata": {"one-more": "v"}})
    assert status == 403, body
    assert "128" in body["forbidden"]["message"]
    # Changing an existing key does not grow the count.
    assert call(client, "POST", path, {"metadata": {"k0": "w"}})[0] == 200
    assert call(client, "PUT", path + "/extra", {"meta": {"extra": "v"}})[0] == 403
    assert len(instance_of(deps).metadata) == MAX_METADATA_ITEMS


def test_metadata_at_boot_is_stored_shown_and_limited(env):
    client, deps = env
    server = {"name": "meta", "flavorRef": "1", "metadata": {"role": "db"},
              "block_device_mapping_v2": [{"source_type": "blank", "destination_type": "volume",
                                           "boot_index": 0, "volume_size": 1}]}
    status, body, _ = call(client, "POST", "/servers", {"server": server})
    assert status == 202, body
    uuid = body["server"]["id"]
    assert call(client, "GET", f"/servers/{uuid}/metadata")[1] == {"metadata": {"role": "db"}}
    assert call(client, "GET", f"/servers/{uuid}")[1]["server"]["metadata"] == {"role": "db"}
    server["metadata"] = {f"k{n}": "v" for n in range(MAX_METADATA_ITEMS + 1)}
    status, body, _ = call(client, "POST", "/servers", {"server": server})
    assert status == 403, body


@pytest.mark.parametrize("method, suffix, body", [
    ("POST", "", {"metadata": {"a": "1"}}),
    ("PUT", "", {"metadata": {"a": "1"}}),
    ("PUT", "/a", {"meta": {"a": "1"}}),
])
def test_metadata_changes_are_refused_on_a_locked_server_except_for_an_admin(
        env, method, suffix, body):
    client, _ = env
    path = server_path("LOCKED") + "/metadata" + suffix
    status, answer, _ = call(client, method, path, body)
    assert status == 409, answer
    assert "locked" in answer["conflictingRequest"]["message"]
    assert call(client, method, path, body, headers=ADMIN)[0] == 200


@pytest.mark.parametrize("vm_state, task_state, allowed", [
    ("active", None, True), ("paused", None, True), ("suspended", None, True),
    ("stopped", None, True), ("error", None, False), ("shelved", None, False),
    ("building", None, False), ("active", "rebooting", False),
])
def test_metadata_state_gate(env, vm_state, task_state, allowed):
    client, deps = env
    set_state(deps, "ACTIVE", vm_state, task_state)
    status, body, _ = call(client, "POST", server_path() + "/metadata", {"metadata": {"a": "1"}})
    assert status == (200 if allowed else 409), body
    if not allowed:
        assert "update_metadata" in body["conflictingRequest"]["message"]


def test_delete_of_an_unknown_key_is_404_before_the_lock(env):
    client, _ = env
    assert call(client, "DELETE", server_path("LOCKED") + "/metadata/nope")[0] == 404


def test_concurrent_merges_keep_every_key(env):
    client, deps = env
    path = server_path() + "/metadata"
    errors = []

    def merge(n):
        status = call(client, "POST", path, {"metadata": {f"k{n}": "v"}})[0]
        if status != 200:
            errors.append(status)

    threads = [threading.Thread(target=merge, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert set(instance_of(deps).metadata) == {f"k{n}" for n in range(8)}
