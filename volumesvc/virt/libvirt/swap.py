"""Swap volume on a running domain: mirror a disk into another volume, then pivot.

The guest never stops: QEMU copies the disk while the guest writes to it
(``blockCopy``), and once source and destination are in step (the job is
*ready*: ``cur == end``) the disk is switched to the destination
(``blockJobAbort`` with PIVOT). The guest keeps the same device, target and
serial. Until the pivot nothing of the domain changes: cancelling the job
leaves the guest on the old volume, which is how every failure ends.

The job is started TRANSIENT so the domain stays persistent throughout, its
definition still naming the old volume; only after the pivot is the
definition rewritten to name the new one.
"""

import time
import xml.etree.ElementTree as ET

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.virt.libvirt import config

LOG = logging.getLogger(__name__)

_POLL = 0.2
# libvirt may report no job for a moment right after blockCopy returns.
_START_GRACE = 10.0


def _ready(info) -> bool:
    return bool(info) and info.get("end", 0) > 0 and info.get("cur") == info.get("end")


def _wait_ready(guest, target_dev, timeout):
    """Wait until the mirror is in step; the job vanishing early means it failed."""
    started = time.monotonic()
    deadline = started + timeout
    while True:
        info = guest.block_job_info(target_dev)
        if not info and time.monotonic() - started > _START_GRACE:
            raise exception.VirtDriverError(
                reason=f"the block copy of {target_dev} ended before it was ready")
        if _ready(info):
            return
        if time.monotonic() > deadline:
            raise exception.VirtDriverError(
                reason=f"the block copy of {target_dev} was not ready after {timeout}s "
                       f"({info.get('cur')}/{info.get('end')} bytes)")
        time.sleep(_POLL)


def _pivot(libvirt, guest, target_dev, timeout):
    """Pivot; a guest write can put the mirror out of step again, so retry until then."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            guest.block_job_pivot(target_dev)
            return
        except libvirt.libvirtError as exc:
            if (exc.get_error_code() != libvirt.VIR_ERR_BLOCK_COPY_ACTIVE
                    or time.monotonic() > deadline):
                raise
        time.sleep(_POLL)
        _wait_ready(guest, target_dev, max(deadline - time.monotonic(), _POLL))


def _wait_gone(guest, target_dev, timeout):
    """The pivot is asynchronous in libvirt: wait for the job to disappear."""
    deadline = time.monotonic() + timeout
    while guest.block_job_info(target_dev):
        if time.monotonic() > deadline:
            raise exception.VirtDriverError(
                reason=f"the block job of {target_dev} did not end after the pivot")
        time.sleep(_POLL)


def cancel(libvirt, guest, target_dev):
    """End a copy that must not pivot; nothing running is fine."""
    try:
        if guest.block_job_info(target_dev):
            guest.block_job_cancel(target_dev)
    except libvirt.libvirtError as exc:
        LOG.warning("Could not cancel the block job of %s on %s: %s", target_dev,
                    guest.uuid, exc)


def persist_disk(host, guest, new_disk):
    """Make the domain's definition name ``new_disk``'s volume for the same target.

    Only the disk's source, driver and auth change: its target, address,
    boot order, alias and serial stay as they were defined.
    """
    root = ET.fromstring(guest.get_xml_desc(inactive=True))
    replacement = new_disk.to_element()
    for disk in root.iter("disk"):
        target = disk.find("target")
        if target is None or target.get("dev") != new_disk.target_dev:
            continue
        disk.set("type", replacement.get("type", "file"))
        for tag in ("driver", "source", "auth"):
            for old in disk.findall(tag):
                disk.remove(old)
        for position, tag in enumerate(("driver", "source", "auth")):
            element = replacement.find(tag)
            if element is not None:
                disk.insert(position, element)
        host.define_guest(config.to_string(root))
        return


def grow_to(guest, target_dev, size_bytes):
    """Grow the running disk to ``size_bytes`` when it is smaller; before a copy.

    QEMU mirrors only between disks of one size ("Source and target image
    have different sizes"), and Cinder may hand over a new volume larger than
    the old one (another size, or a backend that rounds differently). The
    guest's disk is grown first, as an extend would, so the copy can start;
    a destination smaller than the disk is left for QEMU to refuse.
    """
    if size_bytes and guest.block_capacity(target_dev) < size_bytes:
        LOG.info("Growing %s of %s to %d bytes before copying it to the new volume",
                 target_dev, guest.uuid, size_bytes)
        guest.block_resize(target_dev, size_bytes)


def copy(libvirt, guest, target_dev, new_disk, timeout, bandwidth_bytes=0):
    """Mirror ``target_dev`` into ``new_disk`` (a DiskConfig) and pivot onto it.

    On any failure before the pivot the job is cancelled and the guest stays
    on its old volume; the error is raised.
    """
    try:
        guest.block_copy(target_dev, new_disk.to_xml(), bandwidth_bytes)
        _wait_ready(guest, target_dev, timeout)
        _pivot(libvirt, guest, target_dev, timeout)
    except Exception:
        cancel(libvirt, guest, target_dev)
        raise
    _wait_gone(guest, target_dev, timeout)
