"""The cluster's hosts are hosts in every part that a move between them needs.

Each compute runs in its network namespace beside a libvirt daemon of its
own (own sockets and state, own host UUID), the daemons reach each other
over the bridge, the volumes are RBD images of one Ceph every host opens,
and every API validates Keystone tokens. The servers here boot the real
guest from ``rbd`` volumes, one on each of two hosts. The last test needs
no deployment: it leaves a host's daemon behind as a SIGKILLed ``start``
would, and checks that ``stop`` removes it with its namespace and mounts.
"""

import json
import os
import re
import subprocess
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.integration.cluster.conftest import http, leftovers, wait_active, wait_until
from tests.integration.cluster.guests import VIRSH_TIMEOUT
from tests.integration.cluster.guests import console as _console
from tests.integration.cluster.guests import domains as _domains
from tests.integration.cluster.guests import virsh as _virsh
from volumesvc_aio import cluster as cluster_mod
from volumesvc_aio import libvirtd, netns


@pytest.fixture(scope="module")
def rbd_servers(api, cluster):
    """{host: (server id, boot volume id)}: the real guest from an ``rbd`` volume on each
    of the first two hosts (2.74 names the host)."""
    hosts = cluster.hosts[:2]
    ids = {}
    for host in hosts:
        status, body = api.boot(f"real-{uuid.uuid4().hex[:6]}", volume_type="rbd",
                                image=True, version="2.74", host=host)
        assert status == 202, body
        ids[host] = body["server"]["id"]
    servers = {}
    for host, server_id in ids.items():
        server = wait_active(api, server_id, cluster)
        assert server["OS-EXT-SRV-ATTR:host"] == host
        (volume,) = server["os-extended-volumes:volumes_attached"]
        servers[host] = (server_id, volume["id"])
    yield servers
    for server_id, _ in servers.values():
        api.delete_server(server_id)


def test_every_api_wants_a_keystone_token(api, cluster):
    assert cluster.keystone is not None
    for url in (f"{api.compute}/servers", f"{api.volume}/volumes",
                f"{cluster.glance.url}/v2/images"):
        status, _ = http("GET", url, token="admin:admin", context=api.tls)
        assert status == 401, url
        status, body = http("GET", url, token=api.token(), context=api.tls)
        assert status == 200, (url, body)


def test_volume_types_name_the_rbd_backend_by_default(api):
    status, body = api.cinder("GET", "/types")
    assert status == 200, body
    names = {t["name"] for t in body["volume_types"]}
    assert {"rbd", "rbd-luks", "file"} <= names, names
    status, body = api.cinder("GET", "/types/default")
    assert status == 200 and body["volume_type"]["name"] == "rbd", body


def test_each_compute_uses_its_own_daemon(api, cluster, rbd_servers):
    for host, (server_id, _) in rbd_servers.items():
        daemon = cluster.libvirtds[host]
        compute_conf = open(cluster.extra_confs[f"compute-{cluster.hosts.index(host) + 1}"]
                            ).read()
        assert f"connection_uri = {daemon.uri}\n" in compute_conf
        mine = _domains(daemon.uri)
        assert server_id in mine
        others = {s for h, (s, _) in rbd_servers.items() if h != host}
        assert not mine & others, f"{host}'s daemon runs another host's server"
    # The third host's daemon runs neither.
    for host in cluster.hosts[2:]:
        assert not _domains(cluster.libvirtds[host].uri) & {
            s for s, _ in rbd_servers.values()}


def test_the_guests_boot_from_rbd_images_on_the_shared_ceph(api, cluster, rbd_servers):
    for host, (server_id, volume_id) in rbd_servers.items():
        daemon = cluster.libvirtds[host]
        root = ET.fromstring(_virsh(daemon.uri, "dumpxml", server_id))
        source = root.find("./devices/disk/source[@protocol='rbd']")
        assert source is not None, ET.tostring(root).decode()
        assert source.get("name") == f"volumes/volume-{volume_id}"
        assert source.find("host").get("name") == cluster.address
        # The image is opened from the host's own address: its QEMU watches it.
        status = json.loads(cluster.ceph.cmd("rbd", "status", f"volumes/volume-{volume_id}",
                                             "--format", "json"))
        watchers = [w["address"].split(":")[0] for w in status["watchers"]]
        assert watchers == [daemon.host.address], status
        # And the guest itself boots from it and sees it as its disk.
        seen = rf"VSGUEST disk name=\S+ serial={volume_id[:20]}"
        wait_until(lambda s=server_id, p=seen: re.search(p, _console(api, s)),
                   f"server {server_id}'s guest to print its boot volume", cluster=cluster)


def test_the_daemons_report_different_host_uuids(cluster):
    reported = {}
    for host, daemon in cluster.libvirtds.items():
        caps = ET.fromstring(_virsh(daemon.uri, "capabilities"))
        reported[host] = caps.findtext("./host/uuid")
        assert reported[host] == daemon.host.host_uuid
    assert len(set(reported.values())) == len(cluster.hosts) == len(reported)


def test_a_host_reaches_its_peers_daemon_over_the_bridge(cluster, rbd_servers):
    (a, (server_a, _)), (b, (server_b, _)) = rbd_servers.items()
    ns_a = cluster.net.namespace(a)
    peer = cluster.libvirtds[b].host
    assert peer.address != cluster.libvirtds[a].host.address
    assert "9.0.0" in _virsh(peer.tcp_uri, "version", namespace=ns_a)
    # It is B's daemon that answers: it runs B's server, not A's.
    seen = _domains(peer.tcp_uri, namespace=ns_a)
    assert server_b in seen and server_a not in seen
    caps = ET.fromstring(_virsh(peer.tcp_uri, "capabilities", namespace=ns_a))
    assert caps.findtext("./host/uuid") == peer.host_uuid


def test_a_guest_moves_live_between_two_hosts_daemons(cluster, tmp_path):
    """What a live migration of the product will ask libvirt for, done by hand.

    A bare guest of the test's own (not a server: the product is not told)
    goes from host A's daemon to host B's, peer to peer over the bridge.
    """
    a, b = (cluster.libvirtds[h] for h in cluster.hosts[:2])
    name = f"vs-move-{uuid.uuid4().hex[:8]}"
    xml = tmp_path / "domain.xml"
    xml.write_text(
        f"<domain type='qemu'><name>{name}</name><memory unit='MiB'>64</memory>"
        "<vcpu>1</vcpu><os><type arch='x86_64' machine='pc'>hvm</type></os>"
        "<features><acpi/></features><devices>"
        "<emulator>/usr/bin/qemu-system-x86_64</emulator></devices></domain>")
    _virsh(a.uri, "create", str(xml))
    try:
        _virsh(a.uri, "migrate", "--live", "--p2p", name, b.host.tcp_uri)
        assert name in _virsh(b.uri, "list", "--name").split()
        assert name not in _virsh(a.uri, "list", "--all", "--name").split()
    finally:
        for daemon in (a, b):
            subprocess.run(["virsh", "-c", daemon.uri, "destroy", name], capture_output=True,
                           timeout=VIRSH_TIMEOUT, check=False)


def test_stop_cleans_what_a_killed_start_left(tmp_path):
    """A host's daemon left running (its starter SIGKILLed) goes with ``stop``'s cleanup,
    and with it its namespace, links and private mounts."""
    state_dir = f"/var/tmp/vs-cluster-kill-{uuid.uuid4().hex[:8]}"
    net = netns.Network("vsck", "10.251.4.0/24")
    try:
        net.setup_bridge()
        ns, address = net.add_host("h1", 1)
        daemon = libvirtd.LibvirtDaemon(
            os.path.join(state_dir, "libvirtd", "h1"),
            host=libvirtd.HostLayout(namespace=ns, address=address,
                                     host_uuid=libvirtd.HostLayout.uuid_for(state_dir, "h1")))
        daemon.configure()
        daemon.start()
        daemon.wait_ready()
        assert _domains(daemon.uri) == set()
        before = leftovers(state_dir, "vsck")
        assert before["mounts"] and before["processes"] and before["namespaces"], before
        # What a SIGKILL of ``start`` leaves: the daemon runs on, nobody holds it.
        daemon.processes = []
        cluster_mod.cleanup(state_dir, net)
        assert leftovers(state_dir, "vsck") == {}
    finally:
        cluster_mod.cleanup(state_dir, net)
        subprocess.run(["rm", "-rf", state_dir], check=False, timeout=60)
