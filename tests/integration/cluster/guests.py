"""What the cluster's tests read from real guests, libvirt daemons and Ceph.

Shared by the tests that move servers between the cluster's hosts: the
guest's console (what it saw), the domains each host's libvirt daemon
has, the hosts Ceph sees an RBD image opened from, and the hosts Cinder's
attachments of a volume name; and a host's death before an evacuation.
"""

import json
import subprocess

VIRSH_TIMEOUT = 120


def virsh(uri, *args, namespace=None):
    argv = ["virsh", "-c", uri, *args]
    if namespace is not None:
        argv = ["ip", "netns", "exec", namespace, *argv]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=VIRSH_TIMEOUT,
                            check=False)
    assert result.returncode == 0, f"{' '.join(argv)}: {result.stderr}"
    return result.stdout


def domains(uri, **kwargs):
    """The uuids of the domains a libvirt daemon has (running or not)."""
    return set(virsh(uri, "list", "--all", "--uuid", **kwargs).split())


def console(api, server_id):
    status, body = api.nova("POST", f"/servers/{server_id}/action",
                            {"os-getConsoleOutput": {}})
    assert status == 200, body
    return body["output"].replace("\r", "")


def watchers(cluster, volume_id):
    """The addresses Ceph sees the volume's RBD image opened from."""
    status = json.loads(cluster.ceph.cmd("rbd", "status", f"volumes/volume-{volume_id}",
                                         "--format", "json"))
    return sorted(w["address"].split(":")[0] for w in status["watchers"])


def volume_hosts(api, volume_id):
    """{server id: host name} of the volume's Cinder attachments."""
    return {a["server_id"]: a.get("host_name")
            for a in api.volume_status(volume_id)["attachments"]}


COMPUTE_BINARY = "volumesvc-compute"


def force_down(api, host, down):
    """Force ``host``'s compute service down (or not) as an operator does before an
    evacuation (2.53)."""
    status, body = api.nova("GET", f"/os-services?binary={COMPUTE_BINARY}&host={host}",
                            version="2.53")
    assert status == 200, body
    (service,) = body["services"]
    status, body = api.nova("PUT", f"/os-services/{service['id']}", {"forced_down": down},
                            version="2.53")
    assert status == 200, body


def host_dies(api, cluster, host, server_id):
    """``host`` dies as far as the deployment can tell: its compute SIGKILLed, the
    server's guest destroyed on its libvirt daemon, its service forced down."""
    cluster.kill(f"compute-{cluster.hosts.index(host) + 1}")
    virsh(cluster.libvirtds[host].uri, "destroy", server_id)
    force_down(api, host, True)
