"""Every conductor SIGKILLed in the middle of each move, on the cluster.

The computes own the moves' steps, but they read and write every record
through a conductor: the source's switch of a live migration, the
destination's BDM updates and finish of an evacuation, the cold move's
settles. Each test boots a server from a blank ``rbd`` volume (no guest
OS: what is checked here is where its disks and domain are, the real
guest's proofs are in the other modules) with a second ``rbd`` volume,
starts a move, SIGKILLs both conductors once the move has reached the
given status, keeps them dead for :data:`HOLD` seconds (calls made
meanwhile wait in RabbitMQ, calls they had taken are lost) and starts them
again. Without an operator the move must settle: a move whose cast the
dead conductors had taken is driven again from its record once they are
back (``conductor/stale_moves.py``), a compute's call they had taken is
asked again, and a live or cold move may also be undone (the server running
on its source); an evacuation, whose source is dead, must go through. Then
the server is on one host with no task, each volume's one Cinder attachment
that host's, a domain there and none elsewhere, the reconciliation's audit
clean; and the same move works again.
"""

import time
import uuid

import pytest

from tests.integration.cluster.conftest import audit, log_lines, wait_active, wait_until
from tests.integration.cluster.guests import domains as _domains
from tests.integration.cluster.guests import force_down, host_dies
from tests.integration.cluster.guests import volume_hosts as _volume_hosts
from tests.integration.cluster.storm import AUDITED

TIMEOUT = 600
#: Seconds the conductors stay dead: longer than a move's steps here, shorter
#: than an RPC call's timeout (a call that waits in the queue is answered).
HOLD = 8


def _name(what):
    return f"mk-{what}-{uuid.uuid4().hex[:6]}"


def _compute(cluster, host):
    return f"compute-{cluster.hosts.index(host) + 1}"


def _migration(api, server_id, migration_type):
    status, body = api.nova("GET", f"/os-migrations?instance_uuid={server_id}"
                                   f"&migration_type={migration_type}", version="2.80")
    assert status == 200, body
    return body["migrations"][0] if body["migrations"] else None


def _status(api, server_id, migration_type):
    migration = _migration(api, server_id, migration_type)
    return migration["status"] if migration else None


def _kill_conductors(cluster, api, server_id, migration_type, reached):
    """SIGKILL every conductor once the move is in ``reached`` (or past it), then start them."""
    wait_until(lambda: _status(api, server_id, migration_type) in reached,
               f"the move in {reached}", timeout=TIMEOUT, interval=0.05)
    seen = _status(api, server_id, migration_type)
    for name in cluster.conductor_names:
        cluster.kill(name)
    try:
        time.sleep(HOLD)
    finally:
        for name in cluster.conductor_names:
            cluster.respawn(name)
    print(f"move-kill: {migration_type}: the conductors killed with the move {seen}")
    return seen


def _boot(api, cluster, host):
    status, body = api.boot(_name("server"), volume_type="rbd", version="2.74", host=host)
    assert status == 202, body
    server_id = body["server"]["id"]
    server = wait_active(api, server_id, cluster)
    root_id = server["os-extended-volumes:volumes_attached"][0]["id"]
    data_id = api.create_volume(_name("data"), volume_type="rbd")
    wait_until(lambda: api.volume_status(data_id)["status"] == "available", "available")
    status, body = api.attach(server_id, data_id, version="2.101")
    assert status == 202, body
    wait_until(lambda: api.volume_status(data_id)["status"] == "in-use", "attached",
               cluster=cluster)
    return server_id, (root_id, data_id)


def _one_home(api, cluster, server_id, volumes, here, elsewhere, statuses=("ACTIVE",)):
    """The server is ``here``'s alone: no task, one attachment per volume, its domain."""
    server = api.server(server_id)
    assert (server["status"] in statuses, server["OS-EXT-SRV-ATTR:host"],
            server["OS-EXT-STS:task_state"]) == (True, here, None), (
        server["status"], log_lines(cluster, [server_id]))
    for volume_id in volumes:
        assert _volume_hosts(api, volume_id) == {server_id: here}, volume_id
        attachments = api.cinder_attachments(volume_id)
        assert [a["instance"] for a in attachments] == [server_id], attachments
    wait_until(lambda: all(server_id not in _domains(cluster.libvirtds[h].uri)
                           for h in elsewhere),
               "no domain of the server elsewhere", timeout=120, cluster=cluster)
    assert server_id in _domains(cluster.libvirtds[here].uri)
    summary = audit(cluster)["summary"]
    assert {k: summary[k] for k in AUDITED} == dict.fromkeys(AUDITED, 0), summary


def _live_migrate(api, server_id, dest):
    status, body = api.nova("POST", f"/servers/{server_id}/action",
                            {"os-migrateLive": {"host": dest, "block_migration": "auto"}},
                            version="2.68")
    assert status == 202, body


LIVE_SETTLED = ("completed", "error", "cancelled")


@pytest.mark.timeout(1200)
# Killed at the first status seen of the cell's and the later ones: the
# second cell lands in ``preparing`` (the destination's attachments) or,
# when the poll misses it, while libvirt moves the guest.
@pytest.mark.parametrize("reached", [("accepted", "queued"), ("preparing",)],
                         ids=["just-accepted", "preparing"])
def test_live_migration_with_every_conductor_sigkilled(api, cluster, reached):
    source, dest = cluster.hosts[0], cluster.hosts[1]
    server_id, volumes = _boot(api, cluster, source)
    try:
        _live_migrate(api, server_id, dest)
        _kill_conductors(cluster, api, server_id, "live-migration",
                         reached + ("preparing", "running", "post-migrating") + LIVE_SETTLED)
        wait_until(lambda: _status(api, server_id, "live-migration") in LIVE_SETTLED,
                   "the move settled", timeout=TIMEOUT, cluster=cluster)
        settled = _status(api, server_id, "live-migration")
        print(f"move-kill: live-migration ended {settled}")
        # A move the dead conductors had not cast yet is driven again by
        # them once they are back ([conductor] move_request_grace); one a
        # step of which failed on the lost call is undone, the server
        # running on the source: either way one home.
        here, gone = (dest, source) if settled == "completed" else (source, dest)
        _one_home(api, cluster, server_id, volumes, here, [gone])
        # And again, back the other way.
        wait_until(lambda: api.server(server_id)["OS-EXT-STS:task_state"] is None,
                   "no task", cluster=cluster)
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"os-migrateLive": {"host": gone,
                                                    "block_migration": "auto"}},
                                version="2.68")
        assert status == 202, body
        wait_until(lambda: api.server(server_id)["OS-EXT-SRV-ATTR:host"] == gone and
                   api.server(server_id)["OS-EXT-STS:task_state"] is None,
                   "the second move", timeout=TIMEOUT, cluster=cluster)
        _one_home(api, cluster, server_id, volumes, gone, [here])
    finally:
        api.delete_server(server_id)


COLD_SETTLED = ("finished", "error")


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("reached", [("pre-migrating",), ("migrating", "post-migrating")],
                         ids=["just-accepted", "migrating"])
def test_cold_migration_with_every_conductor_sigkilled(api, cluster, reached):
    source, dest = cluster.hosts[0], cluster.hosts[1]
    server_id, volumes = _boot(api, cluster, source)
    try:
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"migrate": {"host": dest}}, version="2.56")
        assert status == 202, body
        _kill_conductors(cluster, api, server_id, "migration",
                         reached + ("migrating", "post-migrating") + COLD_SETTLED)
        wait_until(lambda: _status(api, server_id, "migration") in COLD_SETTLED,
                   "the move settled", timeout=TIMEOUT, cluster=cluster)
        settled = _status(api, server_id, "migration")
        print(f"move-kill: cold migration ended {settled}")
        if settled == "finished":
            _one_home(api, cluster, server_id, volumes, dest, [source],
                      statuses=("VERIFY_RESIZE",))
            status, body = api.nova("POST", f"/servers/{server_id}/action",
                                    {"confirmResize": None})
            assert status == 204, body
            here, other = dest, source
        else:
            # Put back: the source started the server again (a call of the
            # source's that a killed conductor had taken failed its step).
            here, other = source, dest
        wait_until(lambda: api.server(server_id)["status"] == "ACTIVE", "ACTIVE",
                   cluster=cluster)
        _one_home(api, cluster, server_id, volumes, here, [other])
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"migrate": {"host": other}}, version="2.56")
        assert status == 202, body
        wait_until(lambda: api.server(server_id)["status"] == "VERIFY_RESIZE",
                   "the second move", timeout=TIMEOUT, cluster=cluster)
        _one_home(api, cluster, server_id, volumes, other, [here],
                  statuses=("VERIFY_RESIZE",))
    finally:
        api.delete_server(server_id)


EVACUATION_SETTLED = ("done", "failed", "error")


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("reached", [("accepted", "pre-migrating"), ("running",)],
                         ids=["just-accepted", "running"])
def test_evacuation_with_every_conductor_sigkilled(api, cluster, reached):
    source, dest = cluster.hosts[0], cluster.hosts[1]
    old = _compute(cluster, source)
    server_id, volumes = _boot(api, cluster, source)
    dead = False
    try:
        host_dies(api, cluster, source, server_id)
        dead = True
        status, body = api.nova("POST", f"/servers/{server_id}/action",
                                {"evacuate": {"host": dest}}, version="2.68")
        assert status == 200, body
        _kill_conductors(cluster, api, server_id, "evacuation",
                         reached + ("running",) + EVACUATION_SETTLED)
        migration = wait_until(
            lambda: (lambda m: m if m and m["status"] in EVACUATION_SETTLED else None)(
                _migration(api, server_id, "evacuation")),
            "the evacuation settled", timeout=TIMEOUT, cluster=cluster)
        print(f"move-kill: evacuation ended {migration['status']}")
        assert migration["status"] == "done", log_lines(cluster, [server_id])
        wait_active(api, server_id, cluster)
        # The old host comes back and lets go of everything of the server.
        cluster.respawn(old)
        dead = False
        force_down(api, source, False)
        wait_until(lambda: _migration(api, server_id, "evacuation")["status"] == "completed",
                   "the old host to let go", timeout=TIMEOUT, cluster=cluster)
        _one_home(api, cluster, server_id, volumes, dest, [source])
        # And the server moves back, live.
        _live_migrate(api, server_id, source)
        wait_until(lambda: _status(api, server_id, "live-migration") in LIVE_SETTLED,
                   "the move back", timeout=TIMEOUT, cluster=cluster)
        assert _status(api, server_id, "live-migration") == "completed"
        _one_home(api, cluster, server_id, volumes, source, [dest])
    finally:
        if dead:
            cluster.respawn(old)
        force_down(api, source, False)
        api.delete_server(server_id)
