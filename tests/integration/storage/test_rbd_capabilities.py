"""The rest of the volume capabilities on the all-in-one's real backends: Ceph RBD and ``file``.

``test_aio_rbd.py`` proves boot (blank, image), attach, extend at 2.51,
multiattach and detach on RBD. This module covers the other capabilities,
on the same shared all-in-one (``ceph_aio``: a one-node Ceph, Cinder types
``rbd`` and ``file``, Glance on RBD, two computes on ``qemu:///system``),
parametrised over both backends where the behaviour must be the same, with
Ceph's own view (``rbd status``/``rbd info``) as the proof on RBD:

* boot from a volume snapshot (on RBD a clone of the snapshot);
* an assisted snapshot refused for an RBD disk, as Nova refuses it;
* the 2.105 extend-completion path on the file backend;
* shelve, offload and unshelve onto the other compute, volumes reconnected;
* createImage through Cinder snapshots, and a boot from that image;
* the 2.106 attachment status while an attach and a detach run;
* reconciliation of a dangling BDM and a dangling Cinder attachment;
* a compute SIGKILLed in the middle of an RBD attach, then restarted.

``aio``, ``nova`` and ``cinder`` are the storage tier's module fixtures
(``conftest.py``). Each test deletes what it made (``made`` catches what a
failure left).
"""

import contextlib
import json
import os
import signal
import time

import pytest

from tests.fixtures.aio_compute import ExtraCompute
from tests.fixtures.virt import ATTACH_DELAY_ENV
from tests.integration.clients.helpers import (
    SERVER_TIMEOUT,
    compute_http,
    delete_server_quietly,
    delete_volume_quietly,
    domain_disks,
    glance_delete,
    glance_image,
    unique,
    wait_server,
    wait_server_gone,
    wait_snapshot_gone,
    wait_until,
    wait_volume,
    wait_volume_gone,
)
from tests.integration.storage.proofs import SYSTEM_URI
from tests.integration.storage.steps import (
    GiB,
    attachment,
    boot,
    delete_attachment_as_a_service,
    detach,
    guest_disk_bytes,
    log_text,
    manage,
    rbd,
    root_volume_id,
    volume_host,
    wait_watchers,
    watchers,
)

pytestmark = pytest.mark.integration

BACKENDS = ("rbd", "file")
ADMIN_PROJECT = "admin"  # noauth: every request of ``admin:admin`` is in this project


@pytest.fixture(scope="module")
def made(nova, cinder, aio):
    """What the module made; whatever a failed test left is deleted at the end.

    Order matters: servers first (their roots go with them), then volumes
    made from snapshots, then snapshots (an RBD snapshot with a clone is
    busy), then the rest, then images.
    """
    things = {"servers": [], "volumes": [], "snapshots": [], "images": []}
    # Cinder's default of 10 volumes per project is less than a failed
    # test can leave behind until the end of the module.
    cinder.quotas.update(ADMIN_PROJECT, volumes=100, snapshots=100, gigabytes=-1)
    yield things
    for server_id in things["servers"]:
        delete_server_quietly(nova, server_id)
    for _ in range(2):  # a source volume goes once its snapshots are gone
        for volume_id in reversed(things["volumes"]):
            with contextlib.suppress(Exception):
                delete_volume_quietly(cinder, volume_id)
        for snapshot_id in things["snapshots"]:
            with contextlib.suppress(Exception):
                cinder.volume_snapshots.delete(snapshot_id)
                wait_snapshot_gone(cinder, snapshot_id)
    for image_id in things["images"]:
        glance_delete(aio, image_id)
    cinder.quotas.delete(ADMIN_PROJECT)  # back to the defaults


@pytest.fixture(scope="module")
def servers(aio, nova, made):
    """One server per backend, booted at 2.67 from a blank 1 GiB volume of that type, lazily."""
    booted = {}

    def server_of(backend):
        if backend not in booted:
            booted[backend] = boot(aio, nova, made, blank_root(backend))
        return booted[backend]
    return server_of


def blank_root(backend):
    return {"source_type": "blank", "destination_type": "volume", "volume_size": 1,
            "volume_type": backend, "boot_index": 0, "delete_on_termination": True}


def new_volume(cinder, made, backend, size=1):
    volume = cinder.volumes.create(size, name=unique(f"cap-{backend}"), volume_type=backend)
    made["volumes"].append(volume.id)
    return wait_volume(cinder, volume.id, "available")


def backend_of(cinder, volume_id):
    """``rbd`` or ``file``: the backend Cinder put the volume on (``host@backend#pool``)."""
    return volume_host(cinder, volume_id).split("#")[0].rsplit("@", 1)[1]


def wait_snapshot(cinder, snapshot_id, status, timeout=SERVER_TIMEOUT):
    def reached():
        current = cinder.volume_snapshots.get(snapshot_id).status
        assert current == status or not current.startswith("error"), current
        return current == status
    wait_until(reached, f"snapshot {snapshot_id} {status}", timeout=timeout)


def delete_snapshot(cinder, made, snapshot_id):
    cinder.volume_snapshots.delete(snapshot_id)
    wait_snapshot_gone(cinder, snapshot_id)
    made["snapshots"].remove(snapshot_id)


def delete_server(nova, made, server_id):
    nova.servers.delete(server_id)
    wait_server_gone(nova, server_id)
    made["servers"].remove(server_id)


def delete_volume(cinder, made, volume_id):
    cinder.volumes.delete(volume_id)
    wait_volume_gone(cinder, volume_id)
    made["volumes"].remove(volume_id)


def attach_async(aio, server_id, volume_id):
    """2.101: 202 with no body, the conductor does the work."""
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id}},
                                   version="2.101")
    assert status == 202, body


def wait_attached(aio, cinder, server_id, volume_id):
    wait_volume(cinder, volume_id, "in-use")
    wait_until(lambda: attachment(aio, server_id, volume_id)["status"] == "attached",
               f"volume {volume_id} listed attached")


def listed(aio, server_id, volume_id, version="2.106"):
    """The volume's entry in the server's attachment list (None when not listed)."""
    status, body, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-volume_attachments",
                                   version=version)
    assert status == 200, body
    return next((e for e in body["volumeAttachments"] if e["volumeId"] == volume_id), None)


def cinder_attachments(cinder, volume_id):
    return cinder.attachments.list(search_opts={"volume_id": volume_id})


def volume_file(aio, volume_id):
    return os.path.join(aio.state_dir, "cinder", "volumes", f"volume-{volume_id}")


def rbd_parent(aio, volume_id):
    parent = rbd(aio, "info", f"volumes/volume-{volume_id}").get("parent")
    return parent and (parent["pool"], parent["image"], parent["snapshot"])


def compute_logs(aio):
    return log_text(aio, "logs/volumesvc-compute*.log")


def qemu_pid(server_id):
    """The pid of the QEMU running ``server_id`` (its UUID on the command line), or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
            if "qemu-system" in os.path.basename(argv[0]) and server_id in argv:
                return int(entry)
    return None


def live_xml(server_id):
    """The live domain XML straight from the libvirt daemon (no compute needed)."""
    import libvirt

    conn = libvirt.open(SYSTEM_URI)
    try:
        return conn.lookupByUUIDString(server_id).XMLDesc(0)
    finally:
        conn.close()


def host_of(nova, server_id):
    return getattr(nova.servers.get(server_id), "OS-EXT-SRV-ATTR:host")


def compute_services(aio):
    status, body, _ = compute_http(aio, "GET", "/os-services?binary=volumesvc-compute",
                                   version="2.53")
    assert status == 200, body
    return body["services"]


# -- boot from a volume snapshot ---------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_boot_from_a_volume_snapshot(aio, nova, cinder, made, backend):
    source = new_volume(cinder, made, backend)
    snapshot = cinder.volume_snapshots.create(source.id, name=unique("cap-snap"))
    made["snapshots"].append(snapshot.id)
    wait_snapshot(cinder, snapshot.id, "available")

    server = boot(aio, nova, made, {
        "source_type": "snapshot", "uuid": snapshot.id, "destination_type": "volume",
        "volume_size": 1, "volume_type": backend, "boot_index": 0,
        "delete_on_termination": True})
    root = root_volume_id(server)
    assert root != source.id
    volume = cinder.volumes.get(root)
    assert (volume.snapshot_id, volume.volume_type, volume.status) == (
        snapshot.id, backend, "in-use")
    assert backend_of(cinder, root) == backend
    if backend == "rbd":
        # Cinder's RBD driver clones the snapshot; QEMU opened the clone.
        assert rbd_parent(aio, root) == ("volumes", f"volume-{source.id}",
                                           f"snapshot-{snapshot.id}")
        assert len(wait_watchers(aio, root, 1)) == 1
        assert domain_disks(aio, server.id)[root] == f"rbd:volumes/volume-{root}"
    else:
        assert domain_disks(aio, server.id)[root] == volume_file(aio, root)

    # The root goes with the server; then the snapshot, then its source.
    delete_server(nova, made, server.id)
    wait_volume_gone(cinder, root)
    delete_snapshot(cinder, made, snapshot.id)
    delete_volume(cinder, made, source.id)


# -- assisted snapshots ----------------------------------------------------------------

def test_an_assisted_snapshot_of_an_rbd_disk_is_refused(aio, cinder, made, servers):
    """Nova's way: the API takes the call (a cast) and the compute reports ``error`` to Cinder.

    Cinder's RBD driver snapshots inside Ceph and never calls this API; a
    caller that does gets its snapshot in ``error`` and the guest keeps its
    RBD disk untouched (no qcow2 overlay on a network disk).
    """
    server = servers("rbd")
    volume = new_volume(cinder, made, "rbd")
    attach_async(aio, server.id, volume.id)
    wait_attached(aio, cinder, server.id, volume.id)
    # A snapshot row for the compute to report on, set back to ``creating``
    # as a remotefs driver's would be while it waits for the compute.
    snapshot = cinder.volume_snapshots.create(volume.id, force=True, name=unique("cap-as"))
    made["snapshots"].append(snapshot.id)
    wait_snapshot(cinder, snapshot.id, "available")
    cinder.volume_snapshots.reset_state(snapshot.id, "creating")
    before = watchers(aio, volume.id)
    assert len(before) == 1

    status, body, _ = compute_http(aio, "POST", "/os-assisted-volume-snapshots", {
        "snapshot": {"volume_id": volume.id, "create_info": {
            "snapshot_id": snapshot.id, "type": "qcow2",
            "new_file": f"volume-{volume.id}.{snapshot.id}"}}}, version="2.1")
    assert (status, body) == (200, {"snapshot": {"id": None, "volumeId": volume.id}}), body
    wait_snapshot(cinder, snapshot.id, "error", timeout=60)
    assert (f"assisted snapshots of volume {volume.id}, an RBD disk of {server.id}, "
            "are not supported") in compute_logs(aio)
    # The guest's disk is the same RBD image, opened by the same client.
    assert domain_disks(aio, server.id)[volume.id] == f"rbd:volumes/volume-{volume.id}"
    assert watchers(aio, volume.id) == before

    cinder.volume_snapshots.reset_state(snapshot.id, "available")
    delete_snapshot(cinder, made, snapshot.id)
    detach(aio, server.id, volume.id)
    wait_volume(cinder, volume.id, "available")
    assert wait_watchers(aio, volume.id, 0) == []
    delete_volume(cinder, made, volume.id)


# -- extend, the 2.105 completion path on the file backend ------------------------------

def test_extend_of_an_attached_file_volume_takes_the_completion_path(
        aio, nova, cinder, made, servers):
    """The file backend waits in ``extending`` for the compute (2.105); RBD takes 2.51.

    ``test_aio_rbd.py`` proves the RBD path; here Cinder hands the resize to
    the compute, which grows the file through QEMU and completes.
    """
    server = servers("file")
    volume = new_volume(cinder, made, "file")
    attach_async(aio, server.id, volume.id)
    wait_attached(aio, cinder, server.id, volume.id)
    device = attachment(aio, server.id, volume.id)["device"]
    assert guest_disk_bytes(server.id, device) == GiB

    cinder.volumes.extend(volume.id, 2)
    wait_until(lambda: (lambda v: (v.status, v.size) == ("in-use", 2))(
        cinder.volumes.get(volume.id)), "the volume in-use at 2 GiB", timeout=120)
    assert guest_disk_bytes(server.id, device) == 2 * GiB
    assert os.path.getsize(volume_file(aio, volume.id)) == 2 * GiB
    assert "extend_new_size" not in cinder.volumes.get(volume.id).metadata
    assert (f"Volume {volume.id} waits in 'extending' for server {server.id}"
            in log_text(aio, "cinder/log/*.log"))
    assert f"(the guest sees {2 * GiB} bytes) and completed with Cinder" in compute_logs(aio)
    _, actions, _ = compute_http(aio, "GET", f"/servers/{server.id}/os-instance-actions",
                                 version="2.105")
    extend = [a for a in actions["instanceActions"] if a["action"] == "extend_volume"]
    _, detail, _ = compute_http(
        aio, "GET", f"/servers/{server.id}/os-instance-actions/{extend[0]['request_id']}",
        version="2.105")
    assert [e["result"] for e in detail["instanceAction"]["events"]] == ["Success"]

    detach(aio, server.id, volume.id)
    wait_volume(cinder, volume.id, "available")
    delete_volume(cinder, made, volume.id)


# -- attachment status (2.106) -----------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_attachment_status_follows_an_attach_and_a_detach(
        aio, cinder, made, servers, backend):
    """``attached`` is shown only once Cinder says in-use and QEMU has the disk."""
    _, shown, _ = compute_http(aio, "GET", "/")
    assert tuple(map(int, shown["version"]["version"].split("."))) >= (2, 106), shown
    server = servers(backend)
    volume = new_volume(cinder, made, backend)
    assert listed(aio, server.id, volume.id) is None

    attach_async(aio, server.id, volume.id)
    seen, deadline = [], time.monotonic() + SERVER_TIMEOUT
    while time.monotonic() < deadline:
        entry = listed(aio, server.id, volume.id)
        shown = entry and entry["status"]
        if shown and (not seen or seen[-1] != shown):
            seen.append(shown)
        if shown == "attached":
            assert cinder.volumes.get(volume.id).status == "in-use", seen
            assert volume.id in domain_disks(aio, server.id), seen
            if backend == "rbd":
                assert len(watchers(aio, volume.id)) == 1, seen
            break
        time.sleep(0.05)
    assert seen == ["attaching", "attached"], seen
    assert "status" not in listed(aio, server.id, volume.id, version="2.105")

    detach(aio, server.id, volume.id)
    seen = []
    while time.monotonic() < deadline:
        entry = listed(aio, server.id, volume.id)
        shown = entry["status"] if entry else "gone"
        if not seen or seen[-1] != shown:
            seen.append(shown)
        if shown == "gone":
            break
        time.sleep(0.05)
    assert seen[-1] == "gone" and set(seen) <= {"detaching", "gone"}, seen
    wait_volume(cinder, volume.id, "available")
    assert volume.id not in domain_disks(aio, server.id)
    if backend == "rbd":
        assert wait_watchers(aio, volume.id, 0) == []
    delete_volume(cinder, made, volume.id)


# -- reconciliation ----------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_cleanup_removes_a_dangling_bdm_and_a_dangling_cinder_attachment(
        aio, cinder, made, servers, backend):
    """Behind volumesvc's back: one attachment deleted in Cinder, one made in Cinder.

    ``volumesvc-manage volume_attachment cleanup`` removes the BDM whose
    attachment is gone (its disk leaves the running domain: on RBD, QEMU's
    watch goes) and deletes the attachment no BDM knows.
    """
    server = servers(backend)
    kept, dropped, stray = (new_volume(cinder, made, backend) for _ in range(3))
    for volume in (kept, dropped):
        attach_async(aio, server.id, volume.id)
        wait_attached(aio, cinder, server.id, volume.id)
    (dropped_attachment,) = cinder_attachments(cinder, dropped.id)
    delete_attachment_as_a_service(aio, dropped_attachment.id)
    wait_volume(cinder, dropped.id, "available")
    made_behind = cinder.attachments.create(
        stray.id, {"host": "elsewhere", "ip": "127.0.0.1", "initiator": "iqn.2026-12.test:x"},
        server.id)
    cinder.attachments.complete(made_behind["id"])
    wait_volume(cinder, stray.id, "in-use")
    if backend == "rbd":
        # Deleting an attachment does not reach into QEMU: the disk is still open.
        assert len(watchers(aio, dropped.id)) == 1

    dry = manage(aio, "volume_attachment", "cleanup", server.id, "--dry-run", "--json")
    assert dry.returncode == 0, dry
    assert dropped.id in domain_disks(aio, server.id)
    run = manage(aio, "volume_attachment", "cleanup", server.id, "--json")
    assert run.returncode == 0, run
    report = json.loads(run.stdout)
    assert [r["volume_id"] for r in report["removed_bdms"]] == [dropped.id], report
    assert [a["attachment_id"] for a in report["deleted_attachments"]] == [made_behind["id"]]
    assert json.loads(dry.stdout)["removed_bdms"] == report["removed_bdms"]

    assert listed(aio, server.id, dropped.id) is None
    assert set(domain_disks(aio, server.id)) >= {kept.id}
    assert dropped.id not in domain_disks(aio, server.id)
    assert cinder_attachments(cinder, stray.id) == []
    wait_volume(cinder, stray.id, "available")
    assert cinder.volumes.get(kept.id).status == "in-use"
    assert attachment(aio, server.id, kept.id)["status"] == "attached"
    if backend == "rbd":
        assert wait_watchers(aio, dropped.id, 0) == []
        assert len(watchers(aio, kept.id)) == 1
    _, actions, _ = compute_http(aio, "GET", f"/servers/{server.id}/os-instance-actions")
    assert "cleanup_volume_attachments" in [a["action"] for a in actions["instanceActions"]]

    detach(aio, server.id, kept.id)
    wait_volume(cinder, kept.id, "available")
    for volume in (kept, dropped, stray):
        delete_volume(cinder, made, volume.id)


# -- createImage and a boot from the image ------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_create_image_snapshots_the_root_in_cinder_and_boots_from_it(
        aio, nova, cinder, made, backend):
    source = boot(aio, nova, made, blank_root(backend))
    source_root = root_volume_id(source)
    image_id = nova.servers.create_image(source.id, unique("cap-image"))
    made["images"].append(image_id)
    image = glance_image(aio, image_id)
    assert (image["status"], image["bdm_v2"]) == ("active", "True"), image
    (mapping,) = [m for m in json.loads(image["block_device_mapping"])
                  if m["destination_type"] == "volume"]
    snapshot_id = mapping["snapshot_id"]
    made["snapshots"].append(snapshot_id)
    assert (mapping["source_type"], mapping["volume_type"], mapping["boot_index"]) == (
        "snapshot", backend, 0), mapping
    snapshot = cinder.volume_snapshots.get(snapshot_id)
    assert (snapshot.volume_id, snapshot.status) == (source_root, "available")
    if backend == "rbd":
        # The snapshot is Ceph's, of the image QEMU has open.
        snaps = [s["name"] for s in rbd(aio, "snap", "ls", f"volumes/volume-{source_root}")]
        assert f"snapshot-{snapshot_id}" in snaps, snaps

    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique("cap-from-image"), "flavorRef": "42", "networks": "none",
        "imageRef": image_id}}, version="2.67")
    assert status == 202, body
    made["servers"].append(body["server"]["id"])
    child = wait_server(nova, body["server"]["id"], aio=aio)
    child_root = root_volume_id(child)
    volume = cinder.volumes.get(child_root)
    assert child_root != source_root
    assert (volume.snapshot_id, volume.volume_type) == (snapshot_id, backend)
    assert backend_of(cinder, child_root) == backend
    if backend == "rbd":
        assert rbd_parent(aio, child_root) == ("volumes", f"volume-{source_root}",
                                                 f"snapshot-{snapshot_id}")
        assert len(wait_watchers(aio, child_root, 1)) == 1
    else:
        assert domain_disks(aio, child.id)[child_root] == volume_file(aio, child_root)

    delete_server(nova, made, child.id)
    wait_volume_gone(cinder, child_root)
    delete_snapshot(cinder, made, snapshot_id)
    delete_server(nova, made, source.id)
    wait_volume_gone(cinder, source_root)
    glance_delete(aio, image_id)
    made["images"].remove(image_id)


# -- shelve, offload, unshelve onto the other compute ---------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_unshelve_onto_the_other_compute_reconnects_the_volumes(
        aio, nova, cinder, made, backend):
    server = boot(aio, nova, made, blank_root(backend))
    root = root_volume_id(server)
    data = new_volume(cinder, made, backend)
    attach_async(aio, server.id, data.id)
    wait_attached(aio, cinder, server.id, data.id)
    first_host = host_of(nova, server.id)
    (other_host,) = {s["host"] for s in compute_services(aio)
                     if s["state"] == "up" and s["status"] == "enabled"} - {first_host}
    first_qemu = qemu_pid(server.id)
    assert first_qemu
    clients = {}
    if backend == "rbd":
        for volume_id in (root, data.id):
            (watcher,) = wait_watchers(aio, volume_id, 1)
            clients[volume_id] = watcher["client"]

    status, body, _ = compute_http(aio, "POST", f"/servers/{server.id}/action",
                                   {"shelve": None}, version="2.91")
    assert status == 202, body
    offloaded = wait_server(nova, server.id, "SHELVED_OFFLOADED", aio=aio)
    assert getattr(offloaded, "OS-EXT-SRV-ATTR:host") is None
    wait_until(lambda: qemu_pid(server.id) is None, "the shelved server's QEMU gone")
    for volume_id in (root, data.id):
        (entry,) = cinder_attachments(cinder, volume_id)
        assert entry.status == "reserved", entry.to_dict()
        if backend == "rbd":
            assert wait_watchers(aio, volume_id, 0) == [], volume_id

    status, body, _ = compute_http(aio, "POST", f"/servers/{server.id}/action",
                                   {"unshelve": {"host": other_host}}, version="2.91")
    assert status == 202, body
    active = wait_server(nova, server.id, aio=aio)
    assert getattr(active, "OS-EXT-SRV-ATTR:host") == other_host
    assert set(domain_disks(aio, server.id)) == {root, data.id}
    new_qemu = qemu_pid(server.id)
    assert new_qemu and new_qemu != first_qemu
    for volume_id in (root, data.id):
        volume = cinder.volumes.get(volume_id)
        assert volume.status == "in-use"
        (entry,) = volume.attachments
        assert (entry["server_id"], entry["host_name"]) == (server.id, other_host), entry
        (att,) = cinder_attachments(cinder, volume_id)
        assert att.status == "attached", att.to_dict()
        if backend == "rbd":
            # The new host's QEMU opened the image: a new client watches it.
            (watcher,) = wait_watchers(aio, volume_id, 1)
            assert watcher["client"] != clients[volume_id], watcher
    assert attachment(aio, server.id, data.id)["status"] == "attached"

    detach(aio, server.id, data.id)
    wait_volume(cinder, data.id, "available")
    delete_server(nova, made, server.id)
    wait_volume_gone(cinder, root)
    delete_volume(cinder, made, data.id)


# -- a compute SIGKILLed in the middle of an RBD attach -----------------------------------

@pytest.fixture
def extra_compute(aio, nova):
    """A third compute of the test's own (the all-in-one stops when one of its own dies).

    Same configuration and libvirt daemon as the others, the slow-attach
    libvirt driver: a window between Cinder's ``attachment_update`` and the
    disk reaching the domain.
    """
    compute = ExtraCompute(aio.state_dir, aio.compute_url, prefix="cap-kill",
                           driver="tests.fixtures.slow_libvirt:SlowAttachLibvirtDriver")
    try:
        yield compute
    finally:
        compute.remove(lambda server_id: delete_server_quietly(nova, server_id))


def test_a_compute_killed_mid_attach_of_an_rbd_volume_finishes_it_after_restart(
        aio, nova, cinder, made, extra_compute):
    """SIGKILL between Cinder's connector and the disk; the domain lives on in libvirtd.

    After the restart nothing is half-made: the compute finds the attachment
    ``attaching`` and its own attach dead with the old process, finishes it
    (the disk reaches the domain, QEMU watches the image) and completes it
    in Cinder, without an operator.
    """
    extra_compute.start({ATTACH_DELAY_ENV: "30"})
    status, body, _ = compute_http(aio, "POST", "/servers", {"server": {
        "name": unique("cap-kill"), "flavorRef": "42", "networks": "none",
        "host": extra_compute.host, "block_device_mapping_v2": [blank_root("rbd")]}},
        version="2.74")
    assert status == 202, body
    server_id = body["server"]["id"]
    made["servers"].append(server_id)
    wait_server(nova, server_id, aio=aio)
    assert host_of(nova, server_id) == extra_compute.host
    volume = new_volume(cinder, made, "rbd")

    attach_async(aio, server_id, volume.id)
    wait_until(lambda: [a.status for a in cinder_attachments(cinder, volume.id)]
               == ["attaching"], "Cinder's attachment attaching (connector given)")
    extra_compute.kill(signal.SIGKILL)
    assert cinder.volumes.get(volume.id).status == "attaching"
    assert volume.id not in live_xml(server_id)
    assert watchers(aio, volume.id) == []
    assert qemu_pid(server_id), "the guest outlives its compute"

    extra_compute.start({ATTACH_DELAY_ENV: "0"})
    wait_attached(aio, cinder, server_id, volume.id)
    (att,) = cinder_attachments(cinder, volume.id)
    assert att.status == "attached"
    assert volume.id in live_xml(server_id)
    assert domain_disks(aio, server_id)[volume.id] == f"rbd:volumes/volume-{volume.id}"
    assert len(wait_watchers(aio, volume.id, 1)) == 1
    assert f"Finished the interrupted attach of volume {volume.id} to {server_id}" in \
        extra_compute.log()
    _, actions, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-instance-actions")
    assert "cleanup_volume_attachments" in [a["action"] for a in actions["instanceActions"]]

    detach(aio, server_id, volume.id)
    wait_volume(cinder, volume.id, "available")
    assert wait_watchers(aio, volume.id, 0) == []
    delete_server(nova, made, server_id)
    delete_volume(cinder, made, volume.id)
