"""Steps the storage tier's tests take through the API and the all-in-one, shared by its modules.

Booting, attaching and detaching as a client would, Ceph's ``rbd``, Cinder's
retypes and logs: the steps several test modules take, kept here so that no
test module imports another (what the storage itself proves is ``proofs.py``).
"""

import glob
import json
import os
import subprocess
import time
import urllib.request

from tests.integration.clients.helpers import (
    compute_http,
    unique,
    wait_server,
    wait_until,
    wait_volume,
)
from tests.integration.conftest import bin_path
from tests.integration.guest.agent import (
    agent_user_data,
    wait_boot,
)
from tests.integration.storage.proofs import (
    SYSTEM_URI,
    name_id,
)
from volumesvc_aio import ceph as ceph_mod

# -- servers, volumes and attachments at 2.101; Ceph's rbd -------------------------------------

GiB = 1 << 30


def rbd(aio, *args):
    """``rbd`` on the all-in-one's Ceph as client.admin (the conf and keyring it printed)."""
    conf = os.path.join(aio.state_dir, "ceph", "ceph.conf")
    result = subprocess.run(["rbd", "-c", conf, "--id", "admin", *args, "--format", "json"],
                            capture_output=True, text=True, timeout=60,
                            env=ceph_mod.clean_env())
    assert result.returncode == 0, f"rbd {' '.join(args)}: {result.stderr}"
    return json.loads(result.stdout) if result.stdout.strip() else None


def watchers(aio, volume_id):
    return rbd(aio, "status", f"volumes/volume-{volume_id}").get("watchers", [])


def wait_watchers(aio, volume_id, count, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        found = watchers(aio, volume_id)
        if len(found) == count or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def boot(aio, nova, created, bdm, version="2.67"):
    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique("rbd"), "flavorRef": "42", "networks": "none",
        "block_device_mapping_v2": [bdm]}}, version=version)
    assert status == 202, body
    created["servers"].append(body["server"]["id"])
    return wait_server(nova, body["server"]["id"], aio=aio)


def root_volume_id(server):
    (attached,) = getattr(server, "os-extended-volumes:volumes_attached")
    return attached["id"]


def volume_host(cinder, volume_id):
    return getattr(cinder.volumes.get(volume_id), "os-vol-host-attr:host")


def attach(aio, server_id, volume_id):
    """Attach at 2.101: 202 with no body at once, the conductor does the work."""
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id}},
                                   version="2.101")
    assert status == 202, body


def attachment(aio, server_id, volume_id):
    status, body, _ = compute_http(
        aio, "GET", f"/servers/{server_id}/os-volume_attachments/{volume_id}", version="2.106")
    assert status == 200, body
    return body["volumeAttachment"]


def detach(aio, server_id, volume_id):
    status, body, _ = compute_http(
        aio, "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}",
        version="2.101")
    assert status == 202, body


def detach_story(aio, server_id, volume_id):
    """What the deployment says of a detach that the guest never saw: its failure message.

    The server's list of attachments (2.106, with their status), the last
    instance action with its events, and the all-in-one's log lines that name
    the volume at WARNING or above.
    """
    _, listed, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-volume_attachments",
                                version="2.106")
    _, actions, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-instance-actions",
                                 version="2.84")
    last = (actions.get("instanceActions") or [{}])[0] if isinstance(actions, dict) else actions
    events = None
    if isinstance(last, dict) and last.get("request_id"):
        _, events, _ = compute_http(
            aio, "GET", f"/servers/{server_id}/os-instance-actions/{last['request_id']}",
            version="2.84")
    logged = [line for line in log_text(aio, "logs/volumesvc-*.log").splitlines()
              if volume_id in line and (" WARNING " in line or " ERROR " in line)]
    return (f"attachments: {json.dumps(listed)}\nlast action: {json.dumps(events or last)}\n"
            "logged:\n" + "\n".join(line[:600] for line in logged[-20:]))


def new_volume(cinder, created, volume_type, size=1):
    volume = cinder.volumes.create(size, name=unique("rbd-data"), volume_type=volume_type)
    created["volumes"].append(volume.id)
    return wait_volume(cinder, volume.id, "available")


def guest_disk_bytes(server_id, device):
    """The size QEMU reports for the domain's disk ``device`` (``/dev/sdb``)."""
    import libvirt

    conn = libvirt.open(SYSTEM_URI)
    try:
        dom = conn.lookupByUUIDString(server_id)
        return dom.blockInfo(device.rsplit("/", 1)[-1])[0]
    finally:
        conn.close()


def delete_attachment_as_a_service(aio, attachment_id):
    """DELETE a Cinder attachment that a running server still uses, as a service may.

    Since its bug 2004555 Cinder lets only a service (a request with a
    service token whose roles include ``service``) delete an attachment that
    Nova still knows; for anyone else it asks the compute API first, which
    its noauth mode cannot reach (a 500). On the noauth all-in-one the
    ``X-Service-Roles`` header is what keystonemiddleware would set after
    validating such a token: the operator's script acting behind volumesvc's
    back, with the service's credentials.
    """
    req = urllib.request.Request(
        f"{aio.volume_url}/attachments/{attachment_id}", method="DELETE",
        headers={"X-Auth-Token": "admin:admin", "X-Service-Roles": "service",
                 "OpenStack-API-Version": "volume 3.67", "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200, resp.read()


def manage(aio, *args):
    """``volumesvc-manage`` run on the all-in-one's configuration; the completed process."""
    return subprocess.run(
        [bin_path("volumesvc-manage"), "--config-file",
         os.path.join(aio.state_dir, "volumesvc.conf"), *args],
        capture_output=True, text=True, timeout=120)


# -- guests with the agent, one on each compute ------------------------------------------------

BOOT_TIMEOUT = 300      # ACTIVE to the agent's first line: TCG on two loaded cores


SEEN_TIMEOUT = 120      # the guest looks once a second; the attach itself takes seconds


class Guest:
    """A server running the agent: its id, root volume, current boot and the marks it wrote."""

    def __init__(self, server_id, root):
        self.id = server_id
        self.root = root
        self.boot = None
        self.image = None
        self.boots = []
        self.marks = {}     # serial -> mark of every disk it marked and still has

    def booted(self, aio):
        self.boot, self.image = wait_boot(aio, self.id, BOOT_TIMEOUT, not_boots=self.boots)
        self.boots.append(self.boot)


def _compute_hosts(aio):
    status, body, _ = compute_http(aio, "GET", "/os-services?binary=volumesvc-compute",
                                   version="2.53")
    assert status == 200, body
    hosts = sorted(s["host"] for s in body["services"]
                   if s["state"] == "up" and s["status"] == "enabled")
    assert len(hosts) >= 2, body
    return hosts


def _boot(aio, host, root_type):
    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique("guest"), "flavorRef": "42", "networks": "none",
        "host": host, "config_drive": True, "user_data": agent_user_data(),
        "block_device_mapping_v2": [{
            "source_type": "image", "uuid": aio.image_id, "destination_type": "volume",
            "volume_size": 1, "volume_type": root_type, "boot_index": 0,
            "delete_on_termination": True}]}}, version="2.74")
    assert status == 202, body
    return body["server"]["id"]


def boot_guests(aio, nova, created, root_types, timeout=240):
    """Guests booted together, the n-th on the n-th compute with a root of ``root_types[n]``.

    ``timeout``: for ACTIVE; an encrypted root's volume takes Cinder longer.
    """
    hosts = _compute_hosts(aio)[:len(root_types)]
    ids = [_boot(aio, host, root_type) for host, root_type in zip(hosts, root_types,
                                                                  strict=True)]
    created["servers"].extend(ids)
    booted = []
    for server_id, host in zip(ids, hosts, strict=True):
        server = wait_server(nova, server_id, aio=aio, timeout=timeout)
        assert getattr(server, "OS-EXT-SRV-ATTR:host") == host
        (root,) = [v["id"] for v in getattr(server, "os-extended-volumes:volumes_attached")]
        booted.append(Guest(server_id, root))
    for guest in booted:
        guest.booted(aio)
        assert guest.image == "none", "the starter image has no vsimage.txt"
    return tuple(booted)


def _listed_status(aio, server_id, volume_id):
    """The volume's attachment status in the server's list (2.106); None while not listed.

    A 2.101 attach answers before the conductor records anything, and a
    multiattach volume is already ``in-use``: only the list says when it is done.
    """
    status, body, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-volume_attachments",
                                   version="2.106")
    assert status == 200, body
    return next((e["status"] for e in body["volumeAttachments"]
                 if e["volumeId"] == volume_id), None)


def attach_until_listed(aio, cinder, server_id, volume_id, **fields):
    """Attach (2.101, or 2.108 with ``read_only``) and wait until the API lists it attached."""
    if fields:
        status, body, _ = compute_http(
            aio, "POST", f"/servers/{server_id}/os-volume_attachments",
            {"volumeAttachment": {"volumeId": volume_id, **fields}}, version="2.108")
        assert status == 202, body
    else:
        attach(aio, server_id, volume_id)
    wait_until(lambda: _listed_status(aio, server_id, volume_id) == "attached",
               f"volume {volume_id} listed attached to {server_id}", timeout=SEEN_TIMEOUT)
    assert server_id in [a["server_id"] for a in cinder.volumes.get(volume_id).attachments]


# -- Cinder's retypes (migrations) and its logs ------------------------------------------------

MIGRATION_TIMEOUT = 300


def volume_file(aio, cinder, volume_id):
    return os.path.join(aio.state_dir, "cinder", "volumes", f"volume-{name_id(cinder, volume_id)}")


def backend_of(cinder, volume_id):
    """``rbd`` or ``file`` from Cinder's ``host@backend#pool``."""
    host = getattr(cinder.volumes.get(volume_id), "os-vol-host-attr:host")
    return host.split("#")[0].rsplit("@", 1)[1]


def retype_in_use(cinder, volume_id, new_type):
    """``cinder retype --migration-policy on-demand``; returns the migration's new volume.

    None when the migration ended before its new volume was seen. Cinder's
    API puts the volume in ``retyping`` before it answers, and the volume
    leaves it only when the migration ends.
    """
    cinder.volumes.retype(volume_id, new_type, "on-demand")

    def started():
        for volume in cinder.volumes.list(search_opts={"all_tenants": 1}):
            if getattr(volume, "migration_status", None) == f"target:{volume_id}":
                return volume.id
        return "ended" if cinder.volumes.get(volume_id).status != "retyping" else None
    found = wait_until(started, "Cinder's migration to start", timeout=MIGRATION_TIMEOUT)
    return None if found == "ended" else found


def cinder_log_lines(aio, volume_id):
    """Cinder's log lines (every service's) that name the volume: why a retype went nowhere."""
    lines = []
    for path in sorted(glob.glob(os.path.join(aio.state_dir, "cinder", "log", "*.log"))):
        with open(path, errors="replace") as f:
            lines += [f"{os.path.basename(path)}: {line.rstrip()[:600]}" for line in f
                      if (volume_id in line or "scheduler" in path)
                      and (" ERROR " in line or " WARNING " in line)]
    return "\n".join(lines[-30:])


def wait_migration(aio, cinder, volume_id, wanted):
    """Wait until the migration ended (``success`` or ``error``); it must have ended ``wanted``.

    Out of ``retyping`` is not the end yet: Cinder's completion first swaps
    the two volumes' records (the volume is then ``in-use`` with no
    migration status and no attachment for a moment), then records
    ``success``.
    """
    def ended():
        volume = cinder.volumes.get(volume_id)
        assert not volume.status.startswith("error"), f"volume {volume_id} is {volume.status}"
        return (volume.status != "retyping"
                and getattr(volume, "migration_status", None) in ("success", "error")
                and volume)
    volume = wait_until(ended, f"the migration of {volume_id} to end",
                        timeout=MIGRATION_TIMEOUT)
    ended_as = (volume.status, getattr(volume, "migration_status", None))
    assert ended_as == ("in-use", wanted), f"{ended_as}\n{cinder_log_lines(aio, volume_id)}"


# -- the all-in-one's logs ---------------------------------------------------------------------

def log_text(aio, pattern):
    """Every log of the all-in-one matching ``pattern`` (under its state dir), concatenated."""
    text = ""
    for path in sorted(glob.glob(os.path.join(aio.state_dir, pattern))):
        with open(path, errors="replace") as f:
            text += f.read()
    return text
