"""Unknown query parameters, route by route: dropped below a version, a 400 from it.

Nova's rule: its list routes became strict at 2.75 (and the instance
action list with its 2.58 paging schema), every other GET at 2.102; the
version documents never look at a query string. ``STRICT_FROM`` is that
rule written out for every GET route of the routing table, so a new route
has to say where it stands.
"""

import pytest

from tests.functional.stack import BLANK_ROOT
from volumesvc.api import errors, routes
from volumesvc.api import microversions as mv
from volumesvc.objects import migration as migration_obj

LISTS = mv.V2_75_STRICT_QUERY
ALL = mv.V2_102_STRICT_QUERY_ALL
SERVER = "/v2.1/servers/<server_id>"

STRICT_FROM = {
    "/": None,
    "/v2": None,
    "/v2/": None,
    "/v2.1": None,
    "/v2.1/": None,
    "/v2.1/os-services": LISTS,
    "/v2.1/servers": LISTS,
    "/v2.1/servers/detail": LISTS,
    SERVER: ALL,
    f"{SERVER}/os-instance-actions": mv.V2_58_ACTION_PAGING,
    f"{SERVER}/os-instance-actions/<request_id>": ALL,
    f"{SERVER}/migrations": ALL,
    f"{SERVER}/migrations/<migration_id>": ALL,
    f"{SERVER}/ips": ALL,
    f"{SERVER}/ips/<network_label>": ALL,
    f"{SERVER}/os-volume_attachments": LISTS,
    f"{SERVER}/os-volume_attachments/<volume_id>": ALL,
    f"{SERVER}/metadata": ALL,
    f"{SERVER}/metadata/<key>": ALL,
    f"{SERVER}/tags": ALL,
    f"{SERVER}/tags/<tag>": ALL,
    "/v2.1/flavors": LISTS,
    "/v2.1/flavors/detail": LISTS,
    "/v2.1/flavors/<flavor_id>": ALL,
    "/v2.1/flavors/<flavor_id>/os-extra_specs": LISTS,
    "/v2.1/flavors/<flavor_id>/os-extra_specs/<key>": LISTS,
    "/v2.1/os-keypairs": LISTS,
    "/v2.1/os-keypairs/<keypair_name>": ALL,
    "/v2.1/limits": LISTS,
    "/v2.1/os-quota-sets/<tenant_id>": LISTS,
    "/v2.1/os-quota-sets/<tenant_id>/defaults": LISTS,
    "/v2.1/os-quota-sets/<tenant_id>/detail": LISTS,
    "/v2.1/os-availability-zone": ALL,
    "/v2.1/os-availability-zone/detail": ALL,
    # Nova's 2.59 schema of the migration list is strict.
    "/v2.1/os-migrations": mv.V2_59_MIGRATION_PAGING,
}
UNKNOWN = "colour"
# An admin in a project whose id may appear in a URL (hex).
PROJECT = "a1"
TOKEN = f"admin:{PROJECT}"


def test_the_table_covers_every_get_route():
    assert set(STRICT_FROM) == {path for path, methods in routes.ROUTES.items()
                                if "GET" in methods}


@pytest.fixture
def world(stack):
    """Placeholder values that name real things: a server with a volume, an action, a migration."""
    server_id = stack.api("POST", "/servers", {"server": {
        "name": "s", "flavorRef": "1", "block_device_mapping_v2": BLANK_ROOT}},
        status=202)[1]["server"]["id"]
    stack.wait_for_server_status(server_id, "ACTIVE")
    volume_id = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server_id, volume_id, token="admin:admin")
    actions = stack.api("GET", f"/servers/{server_id}/os-instance-actions",
                        status=200)[1]["instanceActions"]
    # A compute event closes just after the state it reports (the attach's
    # after the attach answers): wait for every one, or two GETs of an action
    # can differ by that close.
    for action in actions:
        stack.events(stack.admin_context(), server_id, action["request_id"])
    stack.api("POST", "/flavors", {"flavor": {"name": "f", "id": "spec", "ram": 1,
                                              "vcpus": 1, "disk": 1}}, status=200)
    stack.api("POST", "/os-keypairs", {"keypair": {"name": "kp"}}, status=200)
    migration = migration_obj.create(stack.db, stack.admin_context(), instance_uuid=server_id,
                                     status=migration_obj.RUNNING)
    return {"server_id": server_id, "volume_id": volume_id, "migration_id": str(migration.id),
            "request_id": actions[0]["request_id"], "network_label": "private",
            "keypair_name": "kp", "tenant_id": PROJECT,
            "flavor_id": "spec", "key": "hw:cpu_policy", "tag": "blue"}


def _get(stack, path, version, query=""):
    resp = stack.client.get(f"{path}{query}", headers={
        "X-Auth-Token": TOKEN, "OpenStack-API-Version": f"compute {version}",
        "Accept": "application/json"})
    return resp.status_code, resp.get_json(silent=True), resp.headers


def _stable(body):
    """``body`` without the timestamps a service heartbeat moves between two GETs."""
    if isinstance(body, dict):
        return {k: _stable(v) for k, v in body.items() if k not in ("updated_at", "updated")}
    if isinstance(body, list):
        return [_stable(item) for item in body]
    return body


def _dropped(stack, path, version):
    """The unknown key changes nothing: same status (and body, when 200) as without it."""
    plain_status, plain_body, _ = _get(stack, path, version)
    status, body, _ = _get(stack, path, version, f"?{UNKNOWN}=blue")
    assert status == plain_status != 400, (path, version, status, body)
    if status == 200:
        assert _stable(body) == _stable(plain_body), (path, version)


def _refused(stack, path, version):
    plain_status, _, _ = _get(stack, path, version)
    assert plain_status != 400, (path, version)
    status, body, headers = _get(stack, path, version, f"?{UNKNOWN}=blue")
    assert status == 400, (path, version, status, body)
    assert headers[errors.ERROR_CODE_HEADER] == errors.QUERY_INVALID
    assert UNKNOWN in body["badRequest"]["message"]


@pytest.mark.parametrize("template", sorted(STRICT_FROM))
def test_unknown_query_key_is_dropped_below_the_routes_version_and_refused_from_it(
        stack, world, template):
    path = template
    for name, value in world.items():
        path = path.replace(f"<{name}>", value)
    strict_from = STRICT_FROM[template]
    if strict_from is None:
        _dropped(stack, path, mv.MIN_VERSION)
        _dropped(stack, path, mv.MAX_VERSION)
        return
    _dropped(stack, path, mv.before(strict_from))
    _refused(stack, path, strict_from)
    _refused(stack, path, mv.MAX_VERSION)
    scoped = routes.project_scoped(template)
    if scoped is not None:
        # The /{project_id} form of the route follows the same rule.
        scoped_path = scoped.replace("<project_id>", PROJECT)
        for name, value in world.items():
            scoped_path = scoped_path.replace(f"<{name}>", value)
        _dropped(stack, scoped_path, mv.before(strict_from))
        _refused(stack, scoped_path, strict_from)
