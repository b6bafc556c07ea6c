"""Live migration on libvirt: the destination's definition, the move, its monitor.

The source's libvirt daemon migrates the guest peer to peer to the
destination's daemon (``migrateToURI3``): QEMU copies the guest's memory
while it runs, and the disks, all Cinder volumes the destination has
connected already, are not copied. What differs on the destination is
written into the definition sent with it: each volume's disk takes the
destination's connection (its own Cinder attachment; for an encrypted
volume the destination's libvirt secret), the serial console logs to the
destination's instance directory and a config drive is the copy the
destination wrote. Device addresses, aliases and boot order stay, so the
guest sees the same machine.

While the move runs, the monitor reads libvirt's job statistics every
``POLL`` seconds and hands them to the caller, who answers with what the
user asked meanwhile: an abort ends libvirt's job (the guest stays and
keeps running on the source), a force-complete pauses the guest so that
its last memory copies (the ones a busy guest keeps dirtying) converge.
"""

import threading
import time
import xml.etree.ElementTree as ET

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)

POLL = 0.5
ABORT = "abort"
FORCE_COMPLETE = "force-complete"

# Children of a disk that belong to the guest's machine, not to the host's
# connection: kept from the running definition.
_MACHINE_PARTS = ("target", "address", "alias", "boot")


def destination_xml(xml, disks, *, console_log=None, config_drive=None):
    """The running definition ``xml`` rewritten for the destination.

    ``disks``: volume id (the disk's serial) → the disk's XML as the
    destination's connection describes it. Disks of other volumes, and
    everything else, are kept as they are.
    """
    root = ET.fromstring(xml)
    devices = root.find("devices")
    if devices is None:
        return xml
    for index, disk in enumerate(list(devices)):
        if disk.tag != "disk":
            continue
        source = disk.find("source")
        if disk.get("device") == "cdrom" and config_drive and source is not None \
                and source.get("file"):
            source.set("file", config_drive)
            continue
        new_xml = disks.get(disk.findtext("serial") or "")
        if new_xml is None:
            continue
        new = ET.fromstring(new_xml)
        for tag in _MACHINE_PARTS:
            for part in new.findall(tag):
                new.remove(part)
            for part in disk.findall(tag):
                new.append(part)
        devices.remove(disk)
        devices.insert(index, new)
    if console_log:
        for port in devices.findall("serial") + devices.findall("console"):
            log = port.find("log")
            if log is not None:
                log.set("file", console_log)
    return ET.tostring(root, encoding="unicode")


def flags(libvirt):
    """Live, peer to peer, defined on the destination and undefined on the source."""
    return (libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER
            | libvirt.VIR_MIGRATE_PERSIST_DEST | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE)


def params(libvirt, xml, *, migrate_uri=None, bandwidth_mib=0):
    values = {libvirt.VIR_MIGRATE_PARAM_DEST_XML: xml,
              libvirt.VIR_MIGRATE_PARAM_PERSIST_XML: xml}
    if migrate_uri:
        values[libvirt.VIR_MIGRATE_PARAM_URI] = migrate_uri
    if bandwidth_mib:
        values[libvirt.VIR_MIGRATE_PARAM_BANDWIDTH] = int(bandwidth_mib)
    return values


def progress(stats):
    """The migration row's progress fields from libvirt's job statistics."""
    return {key: stats[key] for key in (
        "memory_total", "memory_processed", "memory_remaining",
        "disk_total", "disk_processed", "disk_remaining") if key in stats}


def run(libvirt, guest, uri, migrate_params, *, timeout, on_progress, clock=time.monotonic):
    """Migrate ``guest`` to ``uri`` and watch it; returns True when it was paused to end.

    ``on_progress(fields)`` is called each poll with the progress fields and
    returns None, ``ABORT`` or ``FORCE_COMPLETE``. Raises
    ``LiveMigrationAborted`` (abort, or ``timeout`` seconds passed) or
    ``LiveMigrationFailed``; either way the guest runs on the source (resumed
    if the monitor had paused it).
    """
    outcome = {}

    def _migrate():
        try:
            guest.migrate(uri, migrate_params, flags(libvirt))
        except Exception as exc:  # noqa: BLE001 - handed to the monitor
            outcome["error"] = exc

    mover = threading.Thread(target=_migrate, name=f"live-migration-{guest.uuid}",
                             daemon=True)
    started = clock()
    mover.start()
    paused, aborted = False, None
    while True:
        mover.join(POLL)
        if not mover.is_alive():
            break
        request = on_progress(progress(guest.job_stats()))
        too_long = timeout and clock() - started > timeout
        if aborted is None and (request == ABORT or too_long):
            aborted = ("the user aborted it" if request == ABORT
                       else f"it did not complete within {timeout} s")
            LOG.info("Aborting the live migration of %s: %s", guest.uuid, aborted)
            try:
                guest.abort_job()
            except libvirt.libvirtError as exc:
                LOG.warning("Aborting the migration job of %s failed: %s", guest.uuid, exc)
        elif request == FORCE_COMPLETE and not paused and aborted is None:
            LOG.info("Pausing %s so that its live migration completes", guest.uuid)
            try:
                guest.pause()
                paused = True
            except libvirt.libvirtError as exc:
                LOG.warning("Pausing %s failed: %s", guest.uuid, exc)
    error = outcome.get("error")
    if error is None:
        return paused
    if paused:
        try:
            guest.resume()
        except libvirt.libvirtError as exc:
            LOG.warning("Resuming %s after its failed migration failed: %s", guest.uuid, exc)
    if aborted is not None:
        raise exception.LiveMigrationAborted(instance_uuid=guest.uuid, reason=aborted)
    raise exception.LiveMigrationFailed(instance_uuid=guest.uuid, reason=str(error))
