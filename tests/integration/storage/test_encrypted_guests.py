"""Encrypted volumes on the all-in-one's defaults: the guest reads its data, the backend cannot.

On the storage tier's shared all-in-one (Barbican as the key manager, Cinder
types ``rbd-luks`` and ``file-luks``, two computes on ``qemu:///system``)
two servers run the agent of ``tests/integration/guest/agent.py``, one on
each compute. For an encrypted volume of each backend:

* the guest on one compute writes a mark to it (its console says so);
* what the backend holds starts with a LUKS header and the mark is nowhere
  in its raw bytes (``rbd export`` through the all-in-one's Ceph conf, the
  volume's file);
* moved to the other compute's guest, the volume reads back the mark;
* while attached the compute holds a libvirt secret of the volume's own;
  after detach and delete none is left on the libvirt daemon both computes
  use.

Cinder 29 refuses to create a volume both multiattach and encrypted, so
none can be shared; the test pins that limit. An encrypted volume whose provider
QEMU cannot open (``plain``) is refused with a 400 fault and stays
``available`` with no attachment.
"""

import contextlib
import os
import subprocess

import pytest
from cinderclient import exceptions as cinderclient_exceptions

from tests.integration.clients.helpers import (
    compute_http,
    unique,
    wait_until,
    wait_volume,
    wait_volume_gone,
)
from tests.integration.guest.agent import wait_line, wait_read, wait_written
from tests.integration.storage.test_aio_rbd import attach, detach
from tests.integration.storage.test_guest_proofs import SEEN_TIMEOUT, _attach, boot_guests
from tests.integration.storage.test_swap_real import rbd_image, volume_file
from volumesvc_aio import ceph as ceph_mod
from volumesvc_aio import cinder as cinder_mod

pytestmark = pytest.mark.integration

LUKS_MAGIC = b"LUKS\xba\xbe"
LUKS = dict(cinder_mod.ENCRYPTION)
# NOTE: qemu+unix, not qemu:///system: a test process that opened the
# embedded QEMU driver (another module) can no longer open qemu:///system.
SECRETS_URI = "qemu+unix:///system"


@pytest.fixture(scope="module")
def guests(aio, nova, created):
    """(first, second): one on each compute, root on ``rbd``, agents started."""
    return boot_guests(aio, nova, created, ("rbd", "rbd"))


def _new_volume(cinder, created, volume_type):
    volume = cinder.volumes.create(1, name=unique("luks"), volume_type=volume_type)
    created["volumes"].append(volume.id)
    return wait_volume(cinder, volume.id, "available")


def _raw_bytes(aio, cinder, volume_id, backend):
    """Everything the backend stores for the volume, read past the compute and QEMU."""
    if backend == "file":
        with open(volume_file(aio, cinder, volume_id), "rb") as f:
            return f.read()
    conf = os.path.join(aio.state_dir, "ceph", "ceph.conf")
    result = subprocess.run(["rbd", "-c", conf, "--id", "admin", "export",
                             rbd_image(cinder, volume_id), "-"],
                            capture_output=True, timeout=300, env=ceph_mod.clean_env())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _volume_secrets(volume_id):
    """UUIDs of the libvirt secrets whose usage is this volume, on the computes' daemon."""
    result = subprocess.run(["virsh", "-c", SECRETS_URI, "secret-list"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [line.split()[0] for line in result.stdout.splitlines()
            if line.split()[-1:] == [volume_id]]


def _detach_and_delete(aio, cinder, created, volume_id, server_ids):
    for server_id in server_ids:
        detach(aio, server_id, volume_id)
        wait_line(aio, server_id, rf"VSGUEST gone name=\S+ serial={volume_id}", SEEN_TIMEOUT)
    wait_until(lambda: cinder.volumes.get(volume_id).status == "available",
               f"{volume_id} available after its detaches", timeout=SEEN_TIMEOUT)
    cinder.volumes.delete(volume_id)
    wait_volume_gone(cinder, volume_id)
    created["volumes"].remove(volume_id)


@pytest.mark.parametrize("backend", ["rbd", "file"])
def test_an_encrypted_volume_holds_only_ciphertext_and_the_other_compute_reads_it(
        aio, cinder, created, guests, backend):
    first, second = guests
    volume = _new_volume(cinder, created, backend + cinder_mod.ENCRYPTED_TYPE_SUFFIX)
    assert volume.encrypted
    _attach(aio, cinder, first.id, volume.id)
    assert _volume_secrets(volume.id), "no libvirt secret of the attached encrypted volume"
    mark = wait_written(aio, first.id, volume.id, SEEN_TIMEOUT)

    raw = _raw_bytes(aio, cinder, volume.id, backend)
    assert raw[:6] == LUKS_MAGIC
    assert mark.encode() not in raw and b"VSMARK" not in raw

    detach(aio, first.id, volume.id)
    wait_line(aio, first.id, rf"VSGUEST gone name=\S+ serial={volume.id}", SEEN_TIMEOUT)
    wait_volume(cinder, volume.id, "available")
    _attach(aio, cinder, second.id, volume.id)
    wait_read(aio, second.id, volume.id, mark, SEEN_TIMEOUT, boot=second.boot)
    _detach_and_delete(aio, cinder, created, volume.id, [second.id])
    assert _volume_secrets(volume.id) == []


@pytest.fixture
def encrypted_multiattach_type(cinder):
    vtype = cinder.volume_types.create(unique("luks-multi"))
    vtype.set_keys({"multiattach": "<is> True", "volume_backend_name": "rbd"})
    cinder.volume_encryption_types.create(vtype.id, LUKS)
    yield vtype.id
    with contextlib.suppress(Exception):
        cinder.volume_encryption_types.delete(vtype.id)
        cinder.volume_types.delete(vtype.id)


def test_cinder_refuses_a_volume_both_multiattach_and_encrypted(
        cinder, encrypted_multiattach_type):
    """Cinder 29's own limit, before any compute is asked: no such volume exists to share.

    The compute opens one (one secret per host, every server on it sharing
    it; tests/functional/services/test_encrypted_attach.py); once a Cinder
    lets such a volume be created, this is where two guests on two computes
    should read it.
    """
    name = unique("luks-multi")
    with pytest.raises(cinderclient_exceptions.BadRequest,
                       match="Multiattach cannot be used with encrypted volumes"):
        cinder.volumes.create(1, name=name, volume_type=encrypted_multiattach_type)
    assert name not in [v.name for v in cinder.volumes.list()]


@pytest.fixture
def plain_encrypted_type(cinder):
    vtype = cinder.volume_types.create(unique("plain-crypt"))
    vtype.set_keys({"volume_backend_name": "file"})
    cinder.volume_encryption_types.create(vtype.id, {**LUKS, "provider": "plain"})
    yield vtype.id
    with contextlib.suppress(Exception):
        cinder.volume_encryption_types.delete(vtype.id)
        cinder.volume_types.delete(vtype.id)


def _failed_entry(aio, server_id, volume_id):
    status, body, _ = compute_http(aio, "GET", f"/servers/{server_id}/os-volume_attachments",
                                   version="2.106")
    assert status == 200, body
    return next((e for e in body["volumeAttachments"]
                 if e["volumeId"] == volume_id and e.get("status") == "error"), None)


def test_a_provider_qemu_cannot_open_is_refused_and_nothing_is_attached(
        aio, cinder, created, guests, plain_encrypted_type):
    first, _ = guests
    volume = _new_volume(cinder, created, plain_encrypted_type)
    assert volume.encrypted
    attach(aio, first.id, volume.id)
    entry = wait_until(lambda: _failed_entry(aio, first.id, volume.id),
                       f"the failed attachment of {volume.id}", timeout=SEEN_TIMEOUT)
    assert entry["fault"]["code"] == 400, entry
    assert "provider plain" in entry["fault"]["message"], entry
    volume = wait_volume(cinder, volume.id, "available")
    assert volume.attachments == []
    assert _volume_secrets(volume.id) == []
