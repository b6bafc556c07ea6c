"""Assisted volume snapshots on a running domain (Cinder remotefs call-backs).

Cinder's remotefs drivers keep a volume as a chain of files. To snapshot
an attached volume they create the new overlay file themselves and ask the
hypervisor to switch the disk to it (an external, disk-only snapshot that
reuses their file); to delete a snapshot they ask it to merge one file of
the chain into another (``blockCommit`` down into ``merge_target_file``,
or ``blockRebase`` pulling ``file_to_merge`` into the active image).
File names in ``create_info``/``delete_info`` are relative to the
directory of the disk's current file.
"""

import os
import time
import xml.etree.ElementTree as ET

from volumesvc import exception

_JOB_POLL = 0.2


def _path_beside(current, name):
    return name if os.path.isabs(name) else os.path.join(os.path.dirname(current), name)


def snapshot_xml(target_dev, new_path, other_devs):
    """A disk-only snapshot of ``target_dev`` into ``new_path``; the rest untouched."""
    root = ET.Element("domainsnapshot")
    disks = ET.SubElement(root, "disks")
    disk = ET.SubElement(disks, "disk", name=target_dev, snapshot="external", type="file")
    ET.SubElement(disk, "source", file=new_path)
    for dev in other_devs:
        ET.SubElement(disks, "disk", name=dev, snapshot="no")
    return ET.tostring(root, encoding="unicode")


def create(libvirt, guest, disk, all_devs, create_info):
    """Switch ``disk`` (a guest DiskInfo) to the overlay; returns its new path."""
    if create_info.get("type") != "qcow2":
        raise exception.Invalid(reason=f"unknown snapshot type {create_info.get('type')!r}")
    new_path = _path_beside(disk.source, create_info["new_file"])
    flags = (libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_DISK_ONLY
             | libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_NO_METADATA
             | libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_REUSE_EXT)
    xml = snapshot_xml(disk.target_dev, new_path,
                       [d for d in all_devs if d != disk.target_dev])
    guest.snapshot_create(xml, flags)
    return new_path


def _wait_job(guest, target_dev, timeout, *, until_ready=False):
    """Wait for the disk's block job to end (or, ``until_ready``, to reach cur == end)."""
    deadline = time.monotonic() + timeout
    while True:
        info = guest.block_job_info(target_dev)
        if not info or (until_ready and info.get("end") and info["cur"] == info["end"]):
            return
        if time.monotonic() > deadline:
            raise exception.VirtDriverError(
                reason=f"block job on {target_dev} still running after {timeout}s")
        time.sleep(_JOB_POLL)


def delete(guest, disk, delete_info, timeout):
    """Merge the snapshot's file out of ``disk``'s chain; returns the active path after."""
    current = disk.source
    to_merge = delete_info.get("file_to_merge")
    target = delete_info.get("merge_target_file")
    if target is None:
        # Pull the data above ``file_to_merge`` into the active image.
        base = _path_beside(current, to_merge) if to_merge else None
        guest.block_rebase(disk.target_dev, base)
        _wait_job(guest, disk.target_dev, timeout)
        return current
    top = _path_beside(current, to_merge)
    base = _path_beside(current, target)
    # NOTE: committing the active image itself is an "active commit": the job
    # copies, then waits (ready) until we pivot the disk onto the base.
    active = os.path.realpath(top) == os.path.realpath(current)
    guest.block_commit(disk.target_dev, base, top, active=active)
    _wait_job(guest, disk.target_dev, timeout, until_ready=active)
    if not active:
        return current
    guest.block_job_pivot(disk.target_dev)
    return base
