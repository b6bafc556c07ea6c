"""Swap volume against the all-in-one: real Cinder 29, real QEMU.

Cinder's retype of an in-use volume with ``--migration-policy on-demand``:
Cinder makes the new volume, asks this service to swap (``PUT
os-volume_attachments/{old}`` with the new volume) and waits for
``os-migrate_volume_completion``. A swap Cinder did not ask for is refused.

The retype runs for every ordered pair of the Cinder backends the all-in-one
offers (file → file on one backend: a migration to a new volume of another
type; with the rbd backend also file → rbd and rbd → file), with a volume
made from the Glance starter image. The data must be byte-identical after,
the guest's disk must be the new volume's, the old volume's data gone.
"""

import glob
import hashlib
import itertools
import os
import subprocess

import pytest

from tests.integration.clients.helpers import (
    compute_http,
    delete_volume_quietly,
    domain_disks,
    unique,
    volume_backed_server,
    wait_until,
    wait_volume,
)

MIGRATION_TIMEOUT = 300


@pytest.fixture(scope="module")
def server(aio, nova):
    with volume_backed_server(aio, nova, "swap") as booted:
        yield booted


def _digest(aio, source):
    """sha256 of a volume's bytes, read from its file or exported from Ceph."""
    digest = hashlib.sha256()
    if source.startswith("rbd:"):
        (conf,) = glob.glob(os.path.join(aio.state_dir, "**", "ceph.conf"), recursive=True)
        proc = subprocess.run(["rbd", "-c", conf, "export", source[4:], "-"],
                              capture_output=True, timeout=300, check=True)
        digest.update(proc.stdout)
        return digest.hexdigest()
    with open(source, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _backends(cinder):
    # NOTE: cinderclient lifts a detailed pool's capabilities to attributes.
    names = {getattr(pool, "volume_backend_name", None)
             for pool in cinder.pools.list(detailed=True)}
    return sorted(name for name in names if name)


def _type_on(cinder, backend, made):
    vtype = cinder.volume_types.create(unique(f"swap-{backend}"))
    vtype.set_keys({"volume_backend_name": backend})
    made.append(vtype)
    return vtype


def _attach(aio, cinder, server_id, volume_id):
    status, body, _ = compute_http(aio, "POST", f"/servers/{server_id}/os-volume_attachments",
                                   {"volumeAttachment": {"volumeId": volume_id}}, "2.101")
    assert status == 202, body
    wait_volume(cinder, volume_id, "in-use")
    return wait_until(lambda: domain_disks(aio, server_id).get(volume_id), "the disk in the guest")


def _detach(aio, cinder, server_id, volume_id):
    status, body, _ = compute_http(aio, "DELETE",
                                   f"/servers/{server_id}/os-volume_attachments/{volume_id}")
    assert status == 202, body
    wait_volume(cinder, volume_id, "available")


def _image_volume(aio, cinder, vtype):
    volume = cinder.volumes.create(1, name=unique("swap-data"), volume_type=vtype.name,
                                   imageRef=aio.image_id)
    return wait_volume(cinder, volume.id, "available")


def _one_attachment(aio, cinder, server_id, volume_id):
    """Cinder has one attachment of the volume, the one the server's BDM names."""
    volume = cinder.volumes.get(volume_id)
    (entry,) = volume.attachments
    status, shown, _ = compute_http(
        aio, "GET", f"/servers/{server_id}/os-volume_attachments/{volume_id}", version="2.89")
    assert status == 200, shown
    assert shown["volumeAttachment"]["attachment_id"] == entry["attachment_id"]


def test_retype_of_an_in_use_volume_moves_it_between_backends(aio, cinder, server):
    backends = _backends(cinder)
    assert backends, "the all-in-one's Cinder has no backend"
    made_types, ran = [], []
    try:
        for src, dst in itertools.product(backends, repeat=2):
            src_type, dst_type = _type_on(cinder, src, made_types), \
                _type_on(cinder, dst, made_types)
            volume = _image_volume(aio, cinder, src_type)
            try:
                before = _attach(aio, cinder, server.id, volume.id)
                digest = _digest(aio, before)
                cinder.volumes.retype(volume.id, dst_type.name, "on-demand")

                def migrated(volume_id=volume.id):
                    vol = cinder.volumes.get(volume_id)
                    status = getattr(vol, "migration_status", None)
                    assert status != "error", (status, aio.logs(30))
                    return vol if status == "success" and vol.status == "in-use" else None
                vol = wait_until(migrated, f"retype {src} → {dst}", timeout=MIGRATION_TIMEOUT)
                assert vol.volume_type == dst_type.name
                assert getattr(vol, "os-vol-host-attr:host").split("#")[0].endswith(f"@{dst}")
                # Cinder's temporary volume is gone; the id stays the old one.
                leftovers = [v for v in cinder.volumes.list(search_opts={"all_tenants": 1})
                             if (getattr(v, "migration_status", None) or "").endswith(volume.id)]
                assert leftovers == []
                after = domain_disks(aio, server.id)[volume.id]
                assert after != before
                if before.startswith("/"):
                    assert not os.path.exists(before), "the old volume's file is still there"
                assert _digest(aio, after) == digest
                _one_attachment(aio, cinder, server.id, volume.id)
                _detach(aio, cinder, server.id, volume.id)
                ran.append(f"{src}->{dst}")
            finally:
                delete_volume_quietly(cinder, volume.id)
    finally:
        for vtype in made_types:
            try:
                cinder.volume_types.delete(vtype.id)
            except Exception:  # noqa: BLE001 - cleanup only
                pass
    print(f"retype cases run: {', '.join(ran)}")
    assert len(ran) == len(backends) ** 2


def test_a_swap_cinder_did_not_ask_for_is_refused(aio, cinder, server):
    """As Nova (bug 2112187): a volume nobody migrates is not swapped under a server."""
    volume = cinder.volumes.create(1, name=unique("swap-old"))
    new = cinder.volumes.create(1, name=unique("swap-new"))
    try:
        wait_volume(cinder, new.id, "available")
        wait_volume(cinder, volume.id, "available")
        before = _attach(aio, cinder, server.id, volume.id)
        status, body, _ = compute_http(
            aio, "PUT", f"/servers/{server.id}/os-volume_attachments/{volume.id}",
            {"volumeAttachment": {"volumeId": new.id}})
        assert status == 409, body
        assert "is not being migrated" in body["conflictingRequest"]["message"]
        assert cinder.volumes.get(new.id).status == "available"
        assert domain_disks(aio, server.id)[volume.id] == before
        _one_attachment(aio, cinder, server.id, volume.id)
        _detach(aio, cinder, server.id, volume.id)
    finally:
        delete_volume_quietly(cinder, new.id)
        delete_volume_quietly(cinder, volume.id)
