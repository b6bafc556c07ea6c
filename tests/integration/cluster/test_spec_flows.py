"""The five spec flows against the cluster deployment, through HAProxy.

Each flow is what the single-machine tier checks, now with the computes
on other addresses (namespaces), two API nodes, two conductors and a
RabbitMQ cluster with quorum queues between them.
"""

import json
import uuid

import pytest

from tests.integration.cluster.conftest import wait_active, wait_until


def _name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def servers(api, cluster):
    """Three volume-backed servers, which the scheduler spreads over the three computes.

    The scheduler counts every server not yet deleted, so the servers that
    earlier modules deleted (a delete returns before the compute is done)
    must be gone first, or the spread is skewed by a leftover.
    """
    wait_until(lambda: not _servers_left(api), "earlier modules' servers deleted",
               cluster=cluster)
    ids = []
    for _ in range(3):
        status, body = api.boot(_name("flow"))
        assert status == 202, body
        ids.append(body["server"]["id"])
        # One at a time: each placement counts the servers already placed.
        wait_active(api, ids[-1], cluster)
    yield ids
    for server_id in ids:
        api.delete_server(server_id)


def _servers_left(api):
    status, body = api.nova("GET", "/servers?all_tenants=1")
    assert status == 200, body
    return body["servers"]


def _host(api, server_id):
    return api.server(server_id)["OS-EXT-SRV-ATTR:host"]


def _attached(api, server_id, volume_id):
    return any(a["volumeId"] == volume_id and a.get("status") == "attached"
               for a in api.attachments(server_id))


def test_servers_spread_over_the_namespaced_computes(api, cluster, servers):
    assert sorted(_host(api, s) for s in servers) == sorted(cluster.hosts)


def test_async_attach_at_2_101(api, cluster, servers):
    volume_id = api.create_volume(_name("async"))
    wait_until(lambda: api.volume_status(volume_id)["status"] == "available", "available")
    status, body = api.attach(servers[0], volume_id, version="2.101")
    assert status == 202, body
    wait_until(lambda: _attached(api, servers[0], volume_id), "attached", cluster=cluster)
    volume = api.volume_status(volume_id)
    assert volume["status"] == "in-use"
    assert [a["server_id"] for a in volume["attachments"]] == [servers[0]]


def test_multiattach_on_two_computes(api, cluster, servers):
    status, body = api.cinder("POST", "/types", {"volume_type": {
        "name": _name("multiattach"), "extra_specs": {"multiattach": "<is> True"}}})
    assert status == 200, body
    volume_id = api.create_volume(_name("shared"), volume_type=body["volume_type"]["id"])
    wait_until(lambda: api.volume_status(volume_id)["status"] == "available", "available")
    first, second = servers[1], servers[2]
    assert _host(api, first) != _host(api, second)
    for server_id in (first, second):
        status, body = api.attach(server_id, volume_id, version="2.101")
        assert status == 202, body
        wait_until(lambda s=server_id: _attached(api, s, volume_id), "attached",
                   cluster=cluster)
    attached_to = {a["server_id"] for a in api.volume_status(volume_id)["attachments"]}
    assert attached_to == {first, second}


def test_extend_completion_at_2_105(api, cluster, servers):
    volume_id = api.create_volume(_name("extend"))
    wait_until(lambda: api.volume_status(volume_id)["status"] == "available", "available")
    status, body = api.attach(servers[0], volume_id, version="2.101")
    assert status == 202, body
    wait_until(lambda: _attached(api, servers[0], volume_id), "attached", cluster=cluster)
    status, body = api.cinder("POST", f"/volumes/{volume_id}/action",
                              {"os-extend": {"new_size": 2}})
    assert status == 202, body

    def extended():
        volume = api.volume_status(volume_id)
        assert volume["status"] != "error_extending", volume
        return volume["status"] == "in-use" and volume["size"] == 2
    # Cinder posts volume-extended through the load balancer; the compute
    # grows the guest disk and reports back with os-extend_volume_completion.
    wait_until(extended, "extend completed", cluster=cluster)

    def actions():
        status, body = api.nova("GET", f"/servers/{servers[0]}/os-instance-actions",
                                version="2.84")
        assert status == 200, body
        return [a["action"] for a in body["instanceActions"]]
    # Cinder's own extend (a volume type whose driver does not leave the
    # extend to the compute, as rbd) updates the volume first and posts
    # volume-extended after: the action is recorded a moment later.
    wait_until(lambda: "extend_volume" in actions(), "extend_volume action", timeout=60,
               cluster=cluster)


def test_dangling_attachment_cleanup(api, cluster, servers):
    from tests.integration.cluster.conftest import manage

    volume_id = api.create_volume(_name("dangling"))
    wait_until(lambda: api.volume_status(volume_id)["status"] == "available", "available")
    # Behind volumesvc's back: a complete Cinder attachment for the server
    # that no BDM knows.
    status, body = api.cinder("POST", "/attachments", {"attachment": {
        "volume_uuid": volume_id, "instance_uuid": servers[1]}})
    assert status == 200, body
    stray = body["attachment"]["id"]
    status, body = api.cinder("PUT", f"/attachments/{stray}", {"attachment": {"connector": {
        "host": "elsewhere", "ip": cluster.address, "initiator": "iqn.test"}}})
    assert status == 200, body
    status, body = api.cinder("POST", f"/attachments/{stray}/action", {"os-complete": None})
    assert status == 204, body
    assert api.volume_status(volume_id)["status"] == "in-use"
    result = manage(cluster, "volume_attachment", "cleanup", servers[1], "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["deleted_attachments"], result.stdout
    assert api.cinder_attachments(volume_id) == []
    wait_until(lambda: api.volume_status(volume_id)["status"] == "available", "available")


def test_boot_with_volume_type_at_2_67(api, cluster):
    type_name = _name("gold")
    status, body = api.cinder("POST", "/types", {"volume_type": {"name": type_name}})
    assert status == 200, body
    status, body = api.boot(_name("typed"), volume_type=type_name, version="2.67")
    assert status == 202, body
    server_id = body["server"]["id"]
    try:
        wait_active(api, server_id, cluster)
        (root,) = api.attachments(server_id)
        assert api.volume_status(root["volumeId"])["volume_type"] == type_name
    finally:
        api.delete_server(server_id)
