"""Proof from inside running guests: what the service does to volumes, as the guest sees it.

On the storage tier's shared all-in-one (a one-node Ceph, Cinder types
``rbd`` and ``file``, two computes on ``qemu:///system``) two servers of the
starter image run the agent of ``tests/integration/guest/agent.py`` as
their ``user_data`` (config drive): *first* (root on ``rbd``) on one
compute, *second* (root on ``file``) on the other. Each writes a random
mark to every blank disk it gets, its root included, and reports every
mark it reads. Every assertion is a line a guest printed, read through
``os-getConsoleOutput``:

* an extend of an attached volume, Cinder's 2.51 path on ``rbd`` and the
  2.105 completion path on ``file``: the guest's disk line shows the new size;
* a multiattach volume on both servers (two computes), on each backend: the
  mark one guest wrote is read by the other;
* a multiattach volume attached read-only (2.108) to one server and
  read-write to the other: the read-only guest's write is refused, the
  read-write guest's write succeeds, and the read-only guest reads it;
* a swap (``cinder retype --migration-policy on-demand`` of the in-use
  ``file`` volume to ``rbd``): the live guest reads its mark back from the
  new disk (page cache dropped after the swap);
* stop/start, shelve/unshelve and a hard reboot of each guest: the new boot
  reads every mark back from every disk, root included (``rbd`` and ``file``);
* a 2.93 rebuild to a second image (the starter image with a ``vsimage.txt``
  of the test's own on its boot partition, uploaded to Glance): the rebuilt
  guest boots from that image's content and says so.

The tests build on each other's guests and volumes and run in file order.
"""

import contextlib
import os
import shutil
import subprocess
import time
import uuid

import pytest

from tests.integration.clients.helpers import (
    compute_http,
    glance_delete,
    glance_upload_raw,
    unique,
    wait_server,
    wait_until,
    wait_volume,
    wait_volume_gone,
)
from tests.integration.guest.agent import (
    IMAGE_FILE,
    agent_user_data,
    console,
    last_round,
    wait_line,
    wait_read,
    wait_written,
)
from tests.integration.storage.steps import (
    SEEN_TIMEOUT,
    attach_until_listed,
    backend_of,
    boot_guests,
    cinder_log_lines,
    detach,
    detach_story,
    log_text,
    retype_in_use,
    wait_migration,
)
from volumesvc_aio import guest_image

pytestmark = pytest.mark.integration

GiB_SECTORS = (1 << 30) // 512


@pytest.fixture(scope="module")
def guests(aio, nova, created):
    """(first, second): booted together, each on its own compute, agents started."""
    return boot_guests(aio, nova, created, ("rbd", "file"))


def _new_volume(cinder, created, volume_type, size=1):
    volume = cinder.volumes.create(size, name=unique(f"guest-{volume_type}"),
                                   volume_type=volume_type)
    created["volumes"].append(volume.id)
    return wait_volume(cinder, volume.id, "available")


def test_each_guest_marks_its_root_disk(aio, guests):
    for guest in guests:
        guest.marks[guest.root] = wait_written(aio, guest.id, guest.root, SEEN_TIMEOUT)


@pytest.mark.parametrize("backend", ["rbd", "file"])
def test_an_extend_of_an_attached_volume_shows_the_new_size_in_the_guest(
        aio, cinder, created, guests, backend):
    """``rbd``: Cinder grows the image and posts ``volume-extended`` (2.51); ``file``:
    Cinder waits in ``extending`` while the compute grows the disk (2.105)."""
    first, _ = guests
    volume = _new_volume(cinder, created, backend)
    attach_until_listed(aio, cinder, first.id, volume.id)
    wait_line(aio, first.id,
              rf"VSGUEST disk name=\S+ serial={volume.id} size={GiB_SECTORS} ro=0",
              SEEN_TIMEOUT)
    first.marks[volume.id] = wait_written(aio, first.id, volume.id, SEEN_TIMEOUT)
    before = last_round(aio, first.id, first.boot)

    cinder.volumes.extend(volume.id, 2)
    wait_line(aio, first.id,
              rf"VSGUEST disk name=\S+ serial={volume.id} size={2 * GiB_SECTORS} ro=0",
              SEEN_TIMEOUT)
    wait_until(lambda: (lambda v: (v.status, v.size) == ("in-use", 2))(
        cinder.volumes.get(volume.id)), "the volume in-use at 2 GiB", timeout=SEEN_TIMEOUT)
    assert backend_of(cinder, volume.id) == backend
    completion = f"Volume {volume.id} waits in 'extending' for server {first.id}"
    assert (completion in log_text(aio, "cinder/log/*.log")) == (backend == "file")
    # The grown disk still holds what the guest wrote (read again after the change).
    wait_read(aio, first.id, volume.id, first.marks[volume.id], SEEN_TIMEOUT,
              boot=first.boot, min_round=before + 1)


def _wait_moved(aio, cinder, server_id, volume_id, backend):
    """Cinder's completion moves the new volume's attachment under the volume's id after
    it records ``success``: wait for it, and on a timeout say what Cinder shows."""
    deadline = time.monotonic() + SEEN_TIMEOUT
    while True:
        volume = cinder.volumes.get(volume_id)
        if (backend_of(cinder, volume_id) == backend
                and [a["server_id"] for a in volume.attachments] == [server_id]):
            return
        if time.monotonic() > deadline:
            shown = {k: volume.to_dict().get(k) for k in (
                "status", "migration_status", "os-vol-host-attr:host",
                "os-vol-mig-status-attr:name_id", "attachments")}
            pytest.fail(f"volume {volume_id} not attached on {backend}: {shown}\n"
                        f"{cinder_log_lines(aio, volume_id)}\n{aio.logs(30)}")
        time.sleep(0.5)


def test_a_swap_from_file_to_rbd_keeps_what_the_guest_wrote(aio, cinder, created, guests):
    """Cinder's retype of the in-use ``file`` volume swaps the guest's disk onto ``rbd``."""
    first, _ = guests
    volume_id = next(v for v in first.marks
                     if v != first.root and backend_of(cinder, v) == "file")
    before = last_round(aio, first.id, first.boot)
    retype_in_use(cinder, volume_id, "rbd")
    wait_migration(aio, cinder, volume_id, "success")
    _wait_moved(aio, cinder, first.id, volume_id, "rbd")
    # A new disk makes the agent drop its page cache and read every disk again.
    probe = _new_volume(cinder, created, "rbd")
    attach_until_listed(aio, cinder, first.id, probe.id)
    first.marks[probe.id] = wait_written(aio, first.id, probe.id, SEEN_TIMEOUT)
    wait_read(aio, first.id, volume_id, first.marks[volume_id], SEEN_TIMEOUT,
              boot=first.boot, min_round=before + 1)


@pytest.fixture
def multiattach_type(cinder):
    """A multiattach volume type of this test on the backend its test names."""
    made = []

    def of(backend):
        vtype = cinder.volume_types.create(unique(f"guest-multi-{backend}"))
        made.append(vtype.id)
        vtype.set_keys({"multiattach": "<is> True", "volume_backend_name": backend})
        return vtype.id
    yield of
    for type_id in made:
        # After a failure a volume may still use the type; ``created`` deletes it.
        with contextlib.suppress(Exception):
            cinder.volume_types.delete(type_id)


def _detach_everywhere(aio, cinder, created, volume_id, server_ids):
    """Detach from each server in turn (the guest says the disk is gone), then delete."""
    for server_id in server_ids:
        detach(aio, server_id, volume_id)
        try:
            wait_line(aio, server_id, rf"VSGUEST gone name=\S+ serial={volume_id}", SEEN_TIMEOUT)
        except AssertionError as exc:
            try:
                story = detach_story(aio, server_id, volume_id)
            except Exception as why:  # the story is extra: never hide the failure itself
                story = f"(no story of the detach: {why!r})"
            raise AssertionError(f"{exc}\n{story}") from None
        wait_until(lambda s=server_id: s not in [
            a["server_id"] for a in cinder.volumes.get(volume_id).attachments],
            f"the attachment of {server_id} gone", timeout=SEEN_TIMEOUT)
    wait_volume(cinder, volume_id, "available")
    cinder.volumes.delete(volume_id)
    wait_volume_gone(cinder, volume_id)
    created["volumes"].remove(volume_id)


def _wrote_lines(aio, server_id, serial):
    return [line for line in console(aio, server_id)
            if line.startswith("VSGUEST-TEST wrote ") and f"serial={serial} " in line]


@pytest.mark.parametrize("backend", ["rbd", "file"])
def test_a_multiattach_volume_on_two_computes_what_one_guest_writes_the_other_reads(
        aio, cinder, created, guests, multiattach_type, backend):
    first, second = guests
    volume = _new_volume(cinder, created, multiattach_type(backend))
    assert volume.multiattach
    attach_until_listed(aio, cinder, second.id, volume.id)
    mark = wait_written(aio, second.id, volume.id, SEEN_TIMEOUT)
    attach_until_listed(aio, cinder, first.id, volume.id)
    wait_read(aio, first.id, volume.id, mark, SEEN_TIMEOUT, boot=first.boot)
    # The disk held a mark: the first guest did not write one of its own.
    assert _wrote_lines(aio, first.id, volume.id) == []
    _detach_everywhere(aio, cinder, created, volume.id, [first.id, second.id])


@pytest.mark.parametrize("backend", ["rbd", "file"])
def test_a_read_only_attachment_refuses_the_guests_write_the_read_write_one_does_not(
        aio, cinder, created, guests, multiattach_type, backend):
    """2.108: read-only on the first server, read-write on the second, one volume."""
    first, second = guests
    volume = _new_volume(cinder, created, multiattach_type(backend))
    attach_until_listed(aio, cinder, first.id, volume.id, read_only=True)
    wait_line(aio, first.id, rf"VSGUEST disk name=\S+ serial={volume.id} size=\d+ ro=1",
              SEEN_TIMEOUT)
    wait_line(aio, first.id, rf"VSGUEST-TEST write-refused name=\S+ serial={volume.id} ro=1",
              SEEN_TIMEOUT)
    attach_until_listed(aio, cinder, second.id, volume.id, read_only=False)
    wait_line(aio, second.id, rf"VSGUEST disk name=\S+ serial={volume.id} size=\d+ ro=0",
              SEEN_TIMEOUT)
    mark = wait_written(aio, second.id, volume.id, SEEN_TIMEOUT)
    # The read-only guest, looking again every second, reads what the other wrote.
    wait_read(aio, first.id, volume.id, mark, SEEN_TIMEOUT, boot=first.boot)
    assert _wrote_lines(aio, first.id, volume.id) == []
    _detach_everywhere(aio, cinder, created, volume.id, [first.id, second.id])


def _action(aio, server_id, body, version="2.91"):
    status, answer, _ = compute_http(aio, "POST", f"/servers/{server_id}/action", body,
                                     version=version)
    assert status == 202, answer


def _stop_start(aio, nova, guest):
    _action(aio, guest.id, {"os-stop": None})
    wait_server(nova, guest.id, "SHUTOFF", aio=aio)
    _action(aio, guest.id, {"os-start": None})


def _shelve_unshelve(aio, nova, guest):
    _action(aio, guest.id, {"shelve": None})
    wait_server(nova, guest.id, "SHELVED_OFFLOADED", aio=aio, timeout=240)
    _action(aio, guest.id, {"unshelve": None})


def _hard_reboot(aio, nova, guest):
    _action(aio, guest.id, {"reboot": {"type": "HARD"}})


@pytest.mark.parametrize("which", [0, 1], ids=["first-rbd", "second-file"])
@pytest.mark.parametrize("operation", [_stop_start, _shelve_unshelve, _hard_reboot],
                         ids=["stop-start", "shelve-unshelve", "hard-reboot"])
def test_the_guest_reads_every_mark_back_after(aio, nova, guests, operation, which):
    """The first guest has its ``rbd`` root and three ``rbd`` volumes (one swapped from
    ``file``), the second its ``file`` root."""
    guest = guests[which]
    assert guest.root in guest.marks and len(guest.marks) >= (4 if which == 0 else 1), \
        "the earlier tests marked the roots and the data volumes"
    operation(aio, nova, guest)
    wait_server(nova, guest.id, aio=aio, timeout=240)
    guest.booted(aio)
    for serial, mark in guest.marks.items():
        wait_read(aio, guest.id, serial, mark, SEEN_TIMEOUT, boot=guest.boot)
    # Nothing was blank again: the new boot wrote no new mark.
    assert not [line for line in console(aio, guest.id)
                if "VSGUEST-TEST wrote" in line and guest.boot in line]


@pytest.fixture(scope="module")
def second_image(aio, tmp_path_factory):
    """The starter image with ``vsimage.txt`` (a token of this run) on its FAT partition."""
    token = f"second-{uuid.uuid4().hex[:12]}"
    work = tmp_path_factory.mktemp("second-image")
    disk, note = work / "disk.raw", work / IMAGE_FILE
    shutil.copyfile(guest_image.ensure_image(), disk)
    note.write_text(token + "\n")
    offset = guest_image.PARTITION_START * guest_image.SECTOR
    subprocess.run(["mcopy", "-i", f"{disk}@@{offset}", str(note), f"::{IMAGE_FILE}"],
                   check=True, capture_output=True, timeout=60)
    image_id = glance_upload_raw(aio, disk.read_bytes(), "guest-second")
    yield image_id, token
    glance_delete(aio, image_id)


def test_a_2_93_rebuild_boots_the_new_images_content(aio, nova, cinder, guests, second_image):
    first, _ = guests
    image_id, token = second_image
    assert os.path.getsize(guest_image.ensure_image()) < 250 << 20
    _action(aio, first.id, {"rebuild": {"imageRef": image_id,
                                        "user_data": agent_user_data()}},
            version="2.93")
    wait_server(nova, first.id, aio=aio, timeout=300)
    first.booted(aio)
    assert first.image == token
    assert cinder.volumes.get(first.root).volume_image_metadata["image_id"] == image_id
    # The data volumes came back with the rebuilt guest, their marks intact.
    for serial, mark in first.marks.items():
        if serial != first.root:
            wait_read(aio, first.id, serial, mark, SEEN_TIMEOUT, boot=first.boot)
