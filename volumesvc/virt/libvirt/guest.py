"""A libvirt domain seen as a guest: lifecycle, devices, block jobs.

Translates libvirt's states and flags into the driver's vocabulary. Gets the
binding from :class:`host.Host` (never imports it itself), so the fake and the
real module go through the same code.
"""

import time

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.states import power_state
from volumesvc.virt.libvirt import config

LOG = logging.getLogger(__name__)


class Guest:
    def __init__(self, domain, libvirt):
        self._domain = domain
        self.libvirt = libvirt

    @property
    def uuid(self):
        return self._domain.UUIDString()

    @property
    def name(self):
        return self._domain.name()

    # -- state ------------------------------------------------------------
    def _state_map(self):
        lv = self.libvirt
        return {
            lv.VIR_DOMAIN_NOSTATE: power_state.NOSTATE,
            lv.VIR_DOMAIN_RUNNING: power_state.RUNNING,
            lv.VIR_DOMAIN_BLOCKED: power_state.RUNNING,
            lv.VIR_DOMAIN_PAUSED: power_state.PAUSED,
            # NOTE: libvirt's SHUTDOWN is "being shut down": still running.
            lv.VIR_DOMAIN_SHUTDOWN: power_state.RUNNING,
            lv.VIR_DOMAIN_SHUTOFF: power_state.SHUTDOWN,
            lv.VIR_DOMAIN_CRASHED: power_state.CRASHED,
            lv.VIR_DOMAIN_PMSUSPENDED: power_state.SUSPENDED,
        }

    def get_power_state(self):
        state, _reason = self._domain.state(0)
        return self._state_map().get(state, power_state.NOSTATE)

    def is_active(self):
        """True while a QEMU process exists (running or paused)."""
        return bool(self._domain.isActive())

    def wait_for_power_state(self, wanted, timeout):
        """Poll until the state is ``wanted``; covers races right after reset/destroy."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                state = self.get_power_state()
            except self.libvirt.libvirtError:
                state = None  # transient while QEMU is being torn down
            if state == wanted:
                return
            if time.monotonic() >= deadline:
                raise exception.VirtDriverError(
                    reason=f"domain {self.uuid} did not reach power state {wanted} within "
                           f"{timeout}s (now {state})")
            time.sleep(0.05)

    # -- lifecycle --------------------------------------------------------
    def launch(self):
        self._domain.create()

    def poweroff(self):
        """Hard power off; an already stopped domain is fine."""
        try:
            self._domain.destroy()
        except self.libvirt.libvirtError as exc:
            if exc.get_error_code() != self.libvirt.VIR_ERR_OPERATION_INVALID:
                raise
            LOG.debug("Domain %s was not running", self.uuid)

    def reset(self):
        self._domain.reset(0)

    def undefine(self):
        self._domain.undefine()

    # -- XML and devices ----------------------------------------------------
    def get_xml_desc(self, inactive=False):
        flags = self.libvirt.VIR_DOMAIN_XML_INACTIVE if inactive else 0
        return self._domain.XMLDesc(flags)

    def get_disks(self, inactive=False):
        return config.parse_disks(self.get_xml_desc(inactive=inactive))

    def find_disk(self, alias=None, serial=None, target_dev=None, inactive=False):
        """First disk matching alias, else serial, else target dev (in that order)."""
        disks = self.get_disks(inactive=inactive)
        for key, value in (("alias", alias), ("serial", serial), ("target_dev", target_dev)):
            if value:
                for disk in disks:
                    if getattr(disk, key) == value:
                        return disk
        return None

    def _flags(self, live, persistent):
        flags = 0
        if live:
            flags |= self.libvirt.VIR_DOMAIN_AFFECT_LIVE
        if persistent:
            flags |= self.libvirt.VIR_DOMAIN_AFFECT_CONFIG
        return flags

    def attach_device(self, xml, live, persistent=True):
        self._domain.attachDeviceFlags(xml, self._flags(live, persistent))

    def detach_device(self, xml, live, persistent):
        self._domain.detachDeviceFlags(xml, self._flags(live, persistent))

    def block_resize(self, target_dev, size_bytes):
        self._domain.blockResize(target_dev, size_bytes,
                                 self.libvirt.VIR_DOMAIN_BLOCK_RESIZE_BYTES)

    def block_capacity(self, target_dev):
        """Size of the disk as QEMU presents it to the guest, in bytes."""
        capacity, _allocation, _physical = self._domain.blockInfo(target_dev, 0)
        return capacity

    # -- assisted volume snapshots (virt/libvirt/snapshots.py) -----------------
    def snapshot_create(self, xml, flags):
        self._domain.snapshotCreateXML(xml, flags)

    def block_rebase(self, target_dev, base):
        self._domain.blockRebase(target_dev, base, 0, 0)

    def block_commit(self, target_dev, base, top, active=False):
        flags = self.libvirt.VIR_DOMAIN_BLOCK_COMMIT_ACTIVE if active else 0
        self._domain.blockCommit(target_dev, base, top, 0, flags)

    def block_job_info(self, target_dev) -> dict:
        """libvirt's job info ({} when no job runs on the disk)."""
        return self._domain.blockJobInfo(target_dev, 0) or {}

    def block_job_pivot(self, target_dev):
        """End a ready active commit by switching the disk to the commit's base."""
        self._domain.blockJobAbort(target_dev,
                                   self.libvirt.VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT)

    # -- swap volume (virt/libvirt/swap.py) --------------------------------------
    def block_copy(self, target_dev, dest_xml, bandwidth_bytes=0):
        """Start mirroring the running disk into the existing ``dest_xml`` disk.

        REUSE_EXT: Cinder made the destination. TRANSIENT_JOB: the domain
        stays persistent during the copy (its definition still names the
        old disk, which is what it must name if the compute dies mid-copy).
        ``bandwidth_bytes`` (bytes per second, 0 for none) caps the copy.
        """
        flags = (self.libvirt.VIR_DOMAIN_BLOCK_COPY_REUSE_EXT
                 | self.libvirt.VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB)
        params = ({self.libvirt.VIR_DOMAIN_BLOCK_COPY_BANDWIDTH: int(bandwidth_bytes)}
                  if bandwidth_bytes else {})
        self._domain.blockCopy(target_dev, dest_xml, params, flags)

    def block_job_cancel(self, target_dev):
        """End the disk's block job without a pivot: the disk stays where it was."""
        self._domain.blockJobAbort(target_dev, 0)

    # -- live migration (migration.py) --------------------------------------
    def migratable_xml(self):
        """The live definition as a destination may take it (no host-only details)."""
        return self._domain.XMLDesc(self.libvirt.VIR_DOMAIN_XML_MIGRATABLE
                                    | self.libvirt.VIR_DOMAIN_XML_SECURE)

    def migrate(self, uri, params, flags):
        """libvirt's migrateToURI3: returns once the guest runs on ``uri``'s host."""
        self._domain.migrateToURI3(uri, params, flags)

    def job_stats(self) -> dict:
        """The running job's statistics (empty when none runs)."""
        try:
            return dict(self._domain.jobStats())
        except self.libvirt.libvirtError:
            return {}

    def abort_job(self):
        self._domain.abortJob()

    def pause(self):
        self._domain.suspend()

    def resume(self):
        self._domain.resume()
