"""Resize and cold migration between two of the cluster's hosts, witnessed by the real guest.

The server boots the real guest from an ``rbd`` volume on one host with a
second ``rbd`` volume attached. Its user_data runs at every boot: it waits
for the data volume (found by its serial), writes a random mark to it the
first time and prints the mark it finds on every later boot, then counts.
After a move the guest has booted again on the other host (a cold move
stops it) and must find its own mark: the data went with the volume. Each
volume's one Cinder attachment must name the host the server is on, Ceph
must see the images opened from that host only, and the other host's
daemon must have no domain of it left.
"""

import re
import uuid

import pytest

from tests.integration.cluster.conftest import log_lines, wait_active, wait_until
from tests.integration.cluster.guests import console, domains, volume_hosts, watchers

TIMEOUT = 600
_WROTE = re.compile(r"VSGUEST-TEST wrote (VSMARK-[0-9a-f-]{36})")
_FOUND = re.compile(r"VSGUEST-TEST found (VSMARK-[0-9a-f-]{36})")
_MARK_SECTOR = 8


def _script(volume_id):
    return f"""#!/bin/sh
while :; do
    dev=$(vsdisk {volume_id} 2>/dev/null) && break
    sleep 1
done
mark=$(dd if="$dev" bs=512 skip={_MARK_SECTOR} count=1 2>/dev/null | tr -d '\\000' | head -n 1)
case "$mark" in
VSMARK-*) echo "VSGUEST-TEST found $mark" ;;
*)  mark="VSMARK-$(cat /proc/sys/kernel/random/uuid)"
    echo "$mark" | dd of="$dev" bs=512 seek={_MARK_SECTOR} conv=sync 2>/dev/null
    sync
    echo "VSGUEST-TEST wrote $mark" ;;
esac
i=0
while :; do i=$((i + 1)); echo "VSGUEST counter=$i"; sleep 1; done
"""


def _name(what):
    return f"rs-{what}-{uuid.uuid4().hex[:6]}"


def _attached(api, server_id, volume_id):
    return any(a["volumeId"] == volume_id and a.get("attachment_status", "attached")
               == "attached" for a in api.attachments(server_id))


def _boot_with_data(api, cluster, host):
    """A counting guest on ``host`` that wrote its mark on its data volume."""
    data_id = api.create_volume(_name("data"), volume_type="rbd")
    wait_until(lambda: api.volume_status(data_id)["status"] == "available", "available")
    status, body = api.boot(_name("guest"), volume_type="rbd", image=True, version="2.74",
                            host=host, user_data=_script(data_id))
    assert status == 202, body
    server_id = body["server"]["id"]
    server = wait_active(api, server_id, cluster)
    root_id = server["os-extended-volumes:volumes_attached"][0]["id"]
    status, body = api.attach(server_id, data_id, version="2.101")
    assert status == 202, body
    wait_until(lambda: _attached(api, server_id, data_id), "the data volume attached",
               cluster=cluster)
    marks = wait_until(lambda: _WROTE.findall(console(api, server_id)),
                       "the guest's mark on its data volume", timeout=TIMEOUT,
                       cluster=cluster)
    return server_id, root_id, data_id, marks[0]


def _move(api, cluster, server_id, action, body, version, wanted):
    status, answer = api.nova("POST", f"/servers/{server_id}/action", {action: body},
                              version=version)
    assert status == 202, answer

    def settled():
        status, body = api.nova("GET", f"/os-migrations?instance_uuid={server_id}",
                                version="2.80")
        assert status == 200, body
        migration = body["migrations"][0]  # newest first
        return migration if migration["status"] in (wanted, "error") else None
    migration = wait_until(settled, f"the migration {wanted}", timeout=TIMEOUT,
                           cluster=cluster)
    if migration["status"] != wanted:
        pytest.fail(f"{action}: migration {migration['status']}\n"
                    f"{log_lines(cluster, [server_id])}", pytrace=False)
    return migration


def _booted_again_with(api, cluster, server_id, mark):
    """The guest booted again (on the server's new host) and found its own mark."""
    wait_until(lambda: mark in _FOUND.findall(console(api, server_id)),
               "the guest finding its mark after the move", timeout=TIMEOUT,
               cluster=cluster)
    assert _WROTE.findall(console(api, server_id)) == [], "the data volume lost its mark"


def _only_on(api, cluster, server_id, volume_ids, host, other):
    address = cluster.libvirtds[host].host.address
    for volume_id in volume_ids:
        assert volume_hosts(api, volume_id) == {server_id: host}, volume_id
        assert watchers(cluster, volume_id) == [address], volume_id
    assert server_id in domains(cluster.libvirtds[host].uri)
    assert server_id not in domains(cluster.libvirtds[other].uri)


@pytest.fixture
def hosts(cluster):
    return cluster.hosts[0], cluster.hosts[1]


def test_resize_then_confirm_moves_the_guest_and_its_data(api, cluster, hosts):
    source, dest = hosts
    server_id, root_id, data_id, mark = _boot_with_data(api, cluster, source)
    try:
        migration = _move(api, cluster, server_id, "resize", {"flavorRef": "1"}, "2.1",
                          "finished")
        assert (migration["source_compute"], migration["dest_compute"],
                migration["migration_type"]) == (source, dest, "resize")
        server = api.server(server_id)
        assert server["status"] == "VERIFY_RESIZE"
        assert server["OS-EXT-SRV-ATTR:host"] == dest
        assert server["flavor"]["original_name"] == "m1.tiny"
        _booted_again_with(api, cluster, server_id, mark)
        _only_on(api, cluster, server_id, (root_id, data_id), dest, source)
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"confirmResize": None})
        assert status == 204, body
        assert api.server(server_id)["status"] == "ACTIVE"
        _only_on(api, cluster, server_id, (root_id, data_id), dest, source)
    finally:
        api.delete_server(server_id)


def test_cold_migration_then_revert_brings_the_guest_back(api, cluster, hosts):
    source, dest = hosts
    server_id, root_id, data_id, mark = _boot_with_data(api, cluster, source)
    try:
        migration = _move(api, cluster, server_id, "migrate", {"host": dest}, "2.56",
                          "finished")
        assert migration["migration_type"] == "migration"
        _booted_again_with(api, cluster, server_id, mark)
        _only_on(api, cluster, server_id, (root_id, data_id), dest, source)
        _move(api, cluster, server_id, "revertResize", None, "2.1", "reverted")
        server = api.server(server_id)
        assert server["status"] == "ACTIVE" and server["OS-EXT-SRV-ATTR:host"] == source
        assert server["flavor"]["original_name"] == "m1.nano"
        wait_until(lambda: len(_FOUND.findall(console(api, server_id))) >= 1,
                   "the guest finding its mark back on the source", timeout=TIMEOUT,
                   cluster=cluster)
        assert _FOUND.findall(console(api, server_id)) == [mark]
        _only_on(api, cluster, server_id, (root_id, data_id), source, dest)
    finally:
        api.delete_server(server_id)
