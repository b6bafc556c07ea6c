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
from tests.integration.cluster.guests import console, domains, virsh, volume_hosts, watchers

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


def _volume_secrets(cluster, host):
    """Volume ids of the libvirt secrets (usage ``volume``) on ``host``'s daemon."""
    return set(re.findall(r"volume\s+(\S+)",
                          virsh(cluster.libvirtds[host].uri, "secret-list")))


def _attach_luks(api, cluster, server_id):
    luks_id = api.create_volume(_name("luks"), volume_type="rbd-luks")
    wait_until(lambda: api.volume_status(luks_id)["status"] == "available", "available")
    status, body = api.attach(server_id, luks_id, version="2.101")
    assert status == 202, body
    wait_until(lambda: _attached(api, server_id, luks_id), "the luks volume attached",
               cluster=cluster)
    _sees(api, cluster, server_id, luks_id)
    return luks_id


def _sees(api, cluster, server_id, volume_id):
    wait_until(lambda: re.search(rf"VSGUEST disk name=\S+ serial={volume_id[:20]}",
                                 console(api, server_id)),
               "the guest seeing the volume", timeout=TIMEOUT, cluster=cluster)


def _secret_only_on(cluster, volume_id, host, other):
    assert volume_id in _volume_secrets(cluster, host), (
        virsh(cluster.libvirtds[host].uri, "secret-list"))
    assert volume_id not in _volume_secrets(cluster, other)


# One real guest booted four times (the boot and three moves): more than the
# tier's 600 s per test on a loaded two-core machine.
@pytest.mark.timeout(1500)
def test_resize_confirm_then_migrate_and_revert_move_the_guest_and_its_data(api, cluster,
                                                                          hosts):
    """One guest, four moves' worth of checks (each boot of a real guest costs minutes).

    Resize to ``m1.tiny`` (to the other host) and confirm; then cold-migrate it
    back (2.56 names the host) and revert, which returns it where the resize
    put it. After each move the guest booted again there and found its mark,
    each volume's one attachment and the RBD watchers are that host's, the
    other host has no domain, and the ``rbd-luks`` volume's secret is defined
    on that host only.
    """
    source, dest = hosts
    server_id, root_id, data_id, mark = _boot_with_data(api, cluster, source)
    try:
        luks_id = _attach_luks(api, cluster, server_id)
        _secret_only_on(cluster, luks_id, source, dest)
        volumes = (root_id, data_id, luks_id)

        migration = _move(api, cluster, server_id, "resize", {"flavorRef": "1"}, "2.1",
                          "finished")
        assert (migration["source_compute"], migration["dest_compute"],
                migration["migration_type"]) == (source, dest, "resize")
        server = api.server(server_id)
        assert server["status"] == "VERIFY_RESIZE"
        assert server["OS-EXT-SRV-ATTR:host"] == dest
        assert server["flavor"]["original_name"] == "m1.tiny"
        _booted_again_with(api, cluster, server_id, mark)
        _sees(api, cluster, server_id, luks_id)
        _only_on(api, cluster, server_id, volumes, dest, source)
        _secret_only_on(cluster, luks_id, dest, source)
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"confirmResize": None})
        assert status == 204, body
        assert api.server(server_id)["status"] == "ACTIVE"
        _only_on(api, cluster, server_id, volumes, dest, source)

        migration = _move(api, cluster, server_id, "migrate", {"host": source}, "2.56",
                          "finished")
        assert migration["migration_type"] == "migration"
        _booted_again_with(api, cluster, server_id, mark)
        _only_on(api, cluster, server_id, volumes, source, dest)
        _secret_only_on(cluster, luks_id, source, dest)

        _move(api, cluster, server_id, "revertResize", None, "2.1", "reverted")
        server = api.server(server_id)
        assert server["status"] == "ACTIVE" and server["OS-EXT-SRV-ATTR:host"] == dest
        assert server["flavor"]["original_name"] == "m1.tiny"
        _booted_again_with(api, cluster, server_id, mark)
        _only_on(api, cluster, server_id, volumes, dest, source)
        _secret_only_on(cluster, luks_id, dest, source)
    finally:
        api.delete_server(server_id)


def _migration_status(api, server_id):
    status, body = api.nova("GET", f"/os-migrations?instance_uuid={server_id}",
                            version="2.80")
    assert status == 200, body
    return body["migrations"][0]["status"] if body["migrations"] else None


# The destination killed while it starts the guest is a cell of the kill
# matrix (real processes, one host) and a functional test; here the source.
@pytest.mark.parametrize("killed, during", [("source", "migrating")])
def test_a_compute_sigkilled_mid_resize_goes_on_at_its_start(api, cluster, hosts, killed,
                                                              during):
    """SIGKILL of the source while it lets go, or of the destination while it starts
    the guest: the compute started again goes on with the move, with no operator.
    The server ends ``VERIFY_RESIZE`` on the destination with one attachment per
    volume (the destination's), the audit clean, and the guest finds its data."""
    from tests.integration.cluster.conftest import audit
    from tests.integration.cluster.storm import AUDITED

    source, dest = hosts
    victim = source if killed == "source" else dest
    compute = f"compute-{cluster.hosts.index(victim) + 1}"
    server_id, root_id, data_id, mark = _boot_with_data(api, cluster, source)
    try:
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"resize": {"flavorRef": "1"}})
        assert status == 202, body
        wait_until(lambda: _migration_status(api, server_id) in (during, "finished"),
                   f"the resize {during}", timeout=TIMEOUT, interval=0.05)
        reached = _migration_status(api, server_id)
        cluster.kill(compute)
        cluster.respawn(compute)
        print(f"resize-kill: {killed} killed with the migration {reached}")
        wait_until(lambda: _migration_status(api, server_id) in ("finished", "error"),
                   "the resize settled", timeout=TIMEOUT, cluster=cluster)
        assert _migration_status(api, server_id) == "finished", log_lines(cluster,
                                                                          [server_id])
        server = api.server(server_id)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", dest)
        _booted_again_with(api, cluster, server_id, mark)
        _only_on(api, cluster, server_id, (root_id, data_id), dest, source)
        summary = audit(cluster)["summary"]
        assert {k: summary[k] for k in AUDITED} == dict.fromkeys(AUDITED, 0), summary
    finally:
        api.delete_server(server_id)
