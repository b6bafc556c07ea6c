"""Live migration of the fake libvirt (``fake.py``): one fake daemon to another.

A mixin of ``fake.FakeDomain``, kept apart so that the fake stays within the
house's module size. ``TARGETS`` is the network between the fake daemons:
each ``FakeDriver`` adds its own under ``fake+migrate://<host>``. Tests set
``FakeLibvirt.migration_seconds`` (how long a move takes; the job reports
progress meanwhile and ``abortJob`` ends it) and ``migration_error`` (the
error a move then fails with).
"""

import threading
import time
import xml.etree.ElementTree as ET
from typing import Any

# The binding's constants of migration and jobs (values match libvirt's).
VIR_MIGRATE_LIVE = 1
VIR_MIGRATE_PEER2PEER = 2
VIR_MIGRATE_PERSIST_DEST = 8
VIR_MIGRATE_UNDEFINE_SOURCE = 16
VIR_MIGRATE_PARAM_URI = "migrate_uri"
VIR_MIGRATE_PARAM_DEST_XML = "destination_xml"
VIR_MIGRATE_PARAM_PERSIST_XML = "persistent_xml"
VIR_MIGRATE_PARAM_BANDWIDTH = "bandwidth"
VIR_DOMAIN_JOB_NONE = 0
VIR_DOMAIN_JOB_UNBOUNDED = 2

# "fake+migrate://<host>" -> (FakeLibvirt, connection URI): the other hosts'
# daemons a live migration reaches, as the network reaches them.
TARGETS: dict[str, tuple] = {}


class _MigrationJob:
    """A live migration the fake runs: its progress and its abort."""

    def __init__(self):
        self.abort = threading.Event()
        self.total = 64 << 20
        self.processed = 0


class MigratingDomain:
    """``migrateToURI3``, ``jobStats`` and ``abortJob`` of a ``FakeDomain``."""

    _job: _MigrationJob | None = None
    #: the fake binding's module (its errors and disk helpers), set by it
    _binding: Any = None

    def migrateToURI3(self: Any, duri, params, flags=0):  # noqa: N802
        """Move the running domain to the fake daemon ``duri`` names.

        The destination gets the domain as ``destination_xml`` defines it, in
        the state it had here; its console log gets a line saying so.
        """
        fake = self._binding
        self._require_active()
        module = self._conn._module
        target = TARGETS.get(duri)
        if target is None:
            raise fake.libvirtError(f"unable to connect to server at '{duri}': Connection "
                                    "refused", fake.VIR_ERR_SYSTEM_ERROR)
        job = self._job = _MigrationJob()
        try:
            self._copy_memory(fake, job, module.migration_seconds if module else 0)
            if module is not None and module.migration_error:
                raise fake.libvirtError(module.migration_error, fake.VIR_ERR_OPERATION_FAILED)
            dest_module, dest_uri = target
            dest_conn = dest_module.open(dest_uri)
            xml = params[VIR_MIGRATE_PARAM_DEST_XML]
            arrived = dest_conn.defineXML(params.get(VIR_MIGRATE_PARAM_PERSIST_XML, xml))
            live = ET.fromstring(xml)
            uuid = self.UUIDString()
            for disk in fake._disks(self._live):
                fake._unlock_disk(uuid, disk)
            for disk in fake._disks(live):
                fake._lock_disk(uuid, disk)
            arrived._live, arrived._state = live, self._state
            arrived._id = next(dest_conn.ids)
            fake._note_console(live, f"fake guest: arrived from {self._conn.uri}")
            self._live, self._state, self._id = None, fake.VIR_DOMAIN_SHUTOFF, -1
            if flags & VIR_MIGRATE_UNDEFINE_SOURCE:
                self._conn.domains.pop(uuid, None)
        finally:
            self._job = None
        return 0

    @staticmethod
    def _copy_memory(fake, job, seconds):
        """The memory copy: ``seconds`` long, progress in ``job``, ended by an abort."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            job.processed = (int(job.total * (1 - max(left, 0) / seconds)) if seconds
                             else job.total)
            if job.abort.is_set():
                raise fake.libvirtError("operation aborted: migration out job: canceled by "
                                        "client", fake.VIR_ERR_OPERATION_ABORTED)
            if left <= 0:
                return
            job.abort.wait(min(left, 0.02))

    def jobStats(self, flags=0):  # noqa: N802
        job = self._job
        if job is None:
            return {"type": VIR_DOMAIN_JOB_NONE}
        return {"type": VIR_DOMAIN_JOB_UNBOUNDED, "memory_total": job.total,
                "memory_processed": job.processed,
                "memory_remaining": job.total - job.processed}

    def abortJob(self):  # noqa: N802
        fake = self._binding
        job = self._job
        if job is None:
            raise fake.libvirtError("Requested operation is not valid: no job is active on "
                                    "the domain", fake.VIR_ERR_OPERATION_INVALID)
        job.abort.set()
        return 0
