"""What the storage tier's tests read from the storage itself, shared by its modules.

The proofs are the storage's own, never our database's: bytes read back
with ``rbd export``, the live domain's disks from the libvirt daemon, and
Cinder's attachments set against the BDMs the API shows.
"""

import hashlib
import os
import subprocess

from tests.integration.clients.helpers import compute_http, unique, wait_server
from volumesvc_aio import ceph as ceph_mod

MiB = 1 << 20
# The libvirt daemon the Ceph all-in-one's computes (and the tests' own) use.
SYSTEM_URI = "qemu:///system"


def name_id(cinder, volume_id):
    """The id Cinder's drivers name the volume's data after (another one after a migration)."""
    volume = cinder.volumes.get(volume_id)
    return getattr(volume, "os-vol-mig-status-attr:name_id", None) or volume_id


def rbd_image(cinder, volume_id):
    return f"volumes/volume-{name_id(cinder, volume_id)}"


def sha256_of_rbd(aio, image, length):
    """SHA-256 of the first ``length`` bytes of an RBD image, read by ``rbd export``."""
    conf = os.path.join(aio.state_dir, "ceph", "ceph.conf")
    proc = subprocess.Popen(["rbd", "-c", conf, "--id", "admin", "export", image, "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=ceph_mod.clean_env())
    try:
        digest, left = hashlib.sha256(), length
        while left:
            chunk = proc.stdout.read(min(left, 4 * MiB))
            assert chunk, f"rbd export {image} ended {left} bytes short"
            digest.update(chunk)
            left -= len(chunk)
        return digest.hexdigest()
    finally:
        proc.kill()
        proc.wait(30)


def scan_rbd(aio, image, needle, head=16):
    """(first ``head`` bytes, whether ``needle`` occurs) of an RBD image (``rbd export``).

    Streamed so a whole root disk is searched without holding it in memory;
    chunks overlap by the needle's length so a match across two is found.
    """
    conf = os.path.join(aio.state_dir, "ceph", "ceph.conf")
    proc = subprocess.Popen(["rbd", "-c", conf, "--id", "admin", "export", image, "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ceph_mod.clean_env())
    first, tail, found = b"", b"", False
    try:
        while chunk := proc.stdout.read(4 * MiB):
            if len(first) < head:
                first += chunk[:head - len(first)]
            found = found or needle in tail + chunk
            tail = chunk[-len(needle):]
        assert proc.wait(300) == 0, proc.stderr.read()[-2000:]
    finally:
        proc.kill()
        proc.wait(30)
    return first, found


def live_disk_sources(server_id):
    """Serial → source of the live domain's disks, straight from the libvirt daemon.

    An RBD disk's source is ``rbd:<pool>/<image>``, a file's its path.
    """
    import xml.etree.ElementTree as ET

    import libvirt

    conn = libvirt.open(SYSTEM_URI)
    try:
        xml = conn.lookupByUUIDString(server_id).XMLDesc(0)
    finally:
        conn.close()
    disks = {}
    for disk in ET.fromstring(xml).findall("./devices/disk"):
        source = disk.find("source")
        disks[disk.findtext("serial")] = (
            f"rbd:{source.get('name')}" if source.get("protocol") == "rbd"
            else source.get("file") or source.get("dev"))
    return disks


def no_leaks(aio, cinder, server_id):
    """Every Cinder attachment of the server is a BDM's and every BDM has its attachment."""
    status, body, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-volume_attachments",
                                   version="2.89")
    assert status == 200, body
    bdms = {(a["volumeId"], a["attachment_id"]) for a in body["volumeAttachments"]}
    in_cinder = {(a.volume_id, a.id) for a in cinder.attachments.list(
        search_opts={"all_tenants": 1, "instance_id": server_id})
        if a.instance == server_id}
    assert bdms == in_cinder, f"BDMs {bdms} but Cinder attachments {in_cinder}"
    assert all(a for _, a in bdms), bdms


def boot_on_host(aio, nova, host, prefix):
    """A server on ``host`` (2.74) booted from a blank 1 GiB rbd volume, once ACTIVE."""
    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique(prefix), "flavorRef": "42", "networks": "none",
        "host": host, "block_device_mapping_v2": [{
            "source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "volume_type": "rbd", "boot_index": 0, "delete_on_termination": True}]}},
        version="2.74")
    assert status == 202, body
    return wait_server(nova, body["server"]["id"], aio=aio)


def task_state(nova, server_id):
    return getattr(nova.servers.get(server_id), "OS-EXT-STS:task_state")
