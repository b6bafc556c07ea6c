"""Evacuation of a real guest from a dead host of the cluster.

The server boots the real guest from an ``rbd`` volume on the first host,
with an encrypted ``rbd-luks`` data volume (QEMU decrypts it, so the host
holds its libvirt secret). Its user_data writes a token at the start of
the data volume once it appears, or says it found the token there already.
The host then dies as far as the deployment can tell: its compute is
SIGKILLed, its guest destroyed on its libvirt daemon, its service forced
down. The admin evacuates the server to the second host: the guest boots
there from the same volumes and finds its token (the data is intact),
each volume has one Cinder attachment, the destination's. When the old
host's compute starts again it leaves nothing of the server there: no
domain (not even a defined one), no secret, and the migration is
``completed``.
"""

import re
import uuid

import pytest

from tests.integration.cluster.conftest import log_lines, wait_active, wait_until
from tests.integration.cluster.guests import console as _console
from tests.integration.cluster.guests import force_down, host_dies
from tests.integration.cluster.guests import virsh as _virsh

TIMEOUT = 600


def _name(what):
    return f"ev-{what}-{uuid.uuid4().hex[:6]}"


def _script(volume_id, token):
    """Count each second; once the data volume is there, find the token or write it."""
    return f"""#!/bin/sh
i=0
seen=""
while :; do
    i=$((i + 1))
    echo "VSGUEST counter=$i"
    if [ -z "$seen" ] && dev=$(vsdisk {volume_id}); then
        got=$(dd if="$dev" bs=16 count=1 2>/dev/null)
        if [ "$got" = "{token}" ]; then
            echo "VSGUEST data {token} found"
        else
            printf '%s' "{token}" | dd of="$dev" bs=16 count=1 conv=sync 2>/dev/null
            sync
            echo "VSGUEST data {token} written"
        fi
        seen=1
    fi
    sleep 1
done
"""


def _all_domains(cluster, host):
    """Every domain of ``host``'s daemon, running or only defined."""
    return set(_virsh(cluster.libvirtds[host].uri, "list", "--all", "--uuid").split())


def _volume_secrets(cluster, host):
    return set(re.findall(r"volume\s+(\S+)", _virsh(cluster.libvirtds[host].uri,
                                                     "secret-list")))


def _evacuation(api, server_id):
    status, body = api.nova("GET", f"/os-migrations?instance_uuid={server_id}"
                                   "&migration_type=evacuation", version="2.80")
    assert status == 200, body
    return body["migrations"][0] if body["migrations"] else None


def _volume_hosts(api, volume_id):
    return {a["server_id"]: a.get("host_name")
            for a in api.volume_status(volume_id)["attachments"]}


def test_a_server_of_a_dead_host_starts_on_another_with_its_data(api, cluster):
    source, dest = cluster.hosts[0], cluster.hosts[1]
    compute = f"compute-{cluster.hosts.index(source) + 1}"
    token = f"VSDATA{uuid.uuid4().hex[:10]}"
    data_id = api.create_volume(_name("data"), volume_type="rbd-luks")
    wait_until(lambda: api.volume_status(data_id)["status"] == "available", "available")
    status, body = api.boot(_name("guest"), volume_type="rbd", image=True, version="2.74",
                            host=source, user_data=_script(data_id, token))
    assert status == 202, body
    server_id = body["server"]["id"]
    killed = False
    try:
        server = wait_active(api, server_id, cluster)
        root_id = server["os-extended-volumes:volumes_attached"][0]["id"]
        status, body = api.attach(server_id, data_id, version="2.101")
        assert status == 202, body
        wait_until(lambda: f"VSGUEST data {token} written" in _console(api, server_id),
                   "the guest writing its token", timeout=TIMEOUT, cluster=cluster)
        assert data_id in _volume_secrets(cluster, source)

        # The host dies: no compute, no guest, its service forced down.
        host_dies(api, cluster, source, server_id)
        killed = True

        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"evacuate": {"host": dest}}, version="2.68")
        assert (status, body) == (200, None), body
        migration = wait_until(
            lambda: (lambda m: m if m and m["status"] in ("done", "failed", "error")
                     else None)(_evacuation(api, server_id)),
            "the evacuation to settle", timeout=TIMEOUT, cluster=cluster)
        if migration["status"] != "done":
            pytest.fail(f"evacuation {migration['status']}:\n"
                        f"{log_lines(cluster, [server_id])}", pytrace=False)
        server = api.server(server_id)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", dest)
        # The guest booted again there, from the same volumes: the token is there.
        wait_until(lambda: f"VSGUEST data {token} found" in _console(api, server_id),
                   "the evacuated guest finding its token", timeout=TIMEOUT, cluster=cluster)
        assert f"VSGUEST data {token} written" not in _console(api, server_id)
        for volume_id in (root_id, data_id):
            assert _volume_hosts(api, volume_id) == {server_id: dest}, volume_id
        assert server_id in _all_domains(cluster, dest)
        assert data_id in _volume_secrets(cluster, dest)

        # The old host comes back: nothing of the server stays there.
        cluster.respawn(compute)
        killed = False
        wait_until(lambda: _evacuation(api, server_id)["status"] == "completed",
                   "the old host to let go", timeout=TIMEOUT, cluster=cluster)
        assert server_id not in _all_domains(cluster, source)
        assert data_id not in _volume_secrets(cluster, source)
        for volume_id in (root_id, data_id):
            assert _volume_hosts(api, volume_id) == {server_id: dest}, volume_id
        assert api.server(server_id)["OS-EXT-SRV-ATTR:host"] == dest
    finally:
        if killed:
            cluster.respawn(compute)
        force_down(api, source, False)
        api.delete_server(server_id)


def _settled(api, cluster, server_id, statuses, what):
    return wait_until(lambda: (lambda m: m if m and m["status"] in statuses else None)(
        _evacuation(api, server_id)), what, timeout=TIMEOUT, cluster=cluster)


def test_the_destination_sigkilled_mid_evacuation_settles_it_at_its_start(api, cluster):
    """SIGKILL of the destination's compute as soon as it took the evacuation.

    Its start either finds the evacuation finished, or undoes it: the server
    ``ERROR`` on the old host with one attachment per volume and no domain
    on the destination; a second evacuation then brings the guest up.
    """
    source, dest = cluster.hosts[0], cluster.hosts[1]
    old = f"compute-{cluster.hosts.index(source) + 1}"
    new = f"compute-{cluster.hosts.index(dest) + 1}"
    status, body = api.boot(_name("guest"), volume_type="rbd", image=True, version="2.74",
                            host=source)
    assert status == 202, body
    server_id = body["server"]["id"]
    dead = set()
    try:
        server = wait_active(api, server_id, cluster)
        root_id = server["os-extended-volumes:volumes_attached"][0]["id"]
        host_dies(api, cluster, source, server_id)
        dead.add(old)
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"evacuate": {"host": dest}}, version="2.68")
        assert status == 200, body
        _settled(api, cluster, server_id, ("running", "done", "failed", "error"),
                 "the destination taking the evacuation")
        cluster.kill(new)
        dead.add(new)
        cluster.respawn(new)
        dead.discard(new)
        migration = _settled(api, cluster, server_id, ("done", "failed"),
                             "the restarted destination settling the evacuation")
        print(f"evacuation-kill: the destination's start found it {migration['status']}")
        server = api.server(server_id)
        if migration["status"] == "failed":
            assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ERROR", source)
            assert server_id not in _all_domains(cluster, dest)
            attachments = api.cinder_attachments(root_id)
            assert [a["instance"] for a in attachments] == [server_id], attachments
            status, body = api.nova("POST", f"/servers/{server_id}/action",
                                    {"evacuate": {"host": dest}}, version="2.68")
            assert status == 200, body
            migration = _settled(api, cluster, server_id, ("done", "failed", "error"),
                                 "the second evacuation")
            assert migration["status"] == "done", log_lines(cluster, [server_id])
        server = wait_active(api, server_id, cluster)
        assert server["OS-EXT-SRV-ATTR:host"] == dest
        assert _volume_hosts(api, root_id) == {server_id: dest}
        assert server_id in _all_domains(cluster, dest)
        wait_until(lambda: "VSGUEST ready" in _console(api, server_id),
                   "the guest booted on the destination", timeout=TIMEOUT, cluster=cluster)
    finally:
        for name in dead:
            cluster.respawn(name)
        force_down(api, source, False)
        api.delete_server(server_id)
