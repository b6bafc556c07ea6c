"""Pure-Python stand-in for the subset of the libvirt binding volumesvc uses.

Hand a :class:`FakeLibvirt` to ``LibvirtDriver(conf, libvirt_module=...)`` and
the real driver, host and guest code run without QEMU. It keeps persistent and
live XML per domain and reproduces the behaviour the driver relies on or must
survive (see doc/source/contributor/dependencies.rst, "libvirt and QEMU"):

* QEMU image locking: a file open for writing in a running domain cannot be
  opened by another running domain unless both disks are ``<shareable/>``
  ("Failed to get "write" lock"); the lock table is process-wide, like the
  host's file locks across compute agents.
* live detach of a scsi disk is immediate and raises a device-removed event;
  a virtio disk stays until reset/destroy because no guest OS acknowledges
  (another live detach of it meanwhile is accepted, as QEMU 7.2 accepts it).
* blockResize needs a running domain and grows the backing file.
* starting a domain writes a fixed console text naming its boot disk to the
  serial port's log, truncating it first unless ``append='on'``.

:class:`FakeDriver` is the LibvirtDriver running on it (``compute_driver =
fake``): a product choice, not only a test double, because the attach-storm
benchmark and the integration tier's deployments run their computes on it
(no QEMU), and the LibvirtDriver unit tests run on it. Recording wrappers
and slow-host doubles for tests live in ``tests/fixtures/virt.py``.
"""

import copy
import itertools
import os
import sys
import threading
import uuid as uuidlib
import xml.etree.ElementTree as ET

from volumesvc.virt import fake_migration, fake_secrets
from volumesvc.virt.libvirt import driver as libvirt_driver

# Only the constants the driver reads; values match libvirt's.
VIR_DOMAIN_NOSTATE = 0
VIR_DOMAIN_RUNNING = 1
VIR_DOMAIN_BLOCKED = 2
VIR_DOMAIN_PAUSED = 3
VIR_DOMAIN_SHUTDOWN = 4
VIR_DOMAIN_SHUTOFF = 5
VIR_DOMAIN_CRASHED = 6
VIR_DOMAIN_PMSUSPENDED = 7
VIR_DOMAIN_AFFECT_CURRENT = 0
VIR_DOMAIN_AFFECT_LIVE = 1
VIR_DOMAIN_AFFECT_CONFIG = 2
VIR_DOMAIN_XML_INACTIVE = 2
VIR_DOMAIN_BLOCK_RESIZE_BYTES = 1
VIR_DOMAIN_SNAPSHOT_CREATE_NO_METADATA = 4
VIR_DOMAIN_BLOCK_COMMIT_ACTIVE = 4
VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT = 2
VIR_DOMAIN_BLOCK_COPY_REUSE_EXT = 2
VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB = 4
VIR_DOMAIN_BLOCK_COPY_BANDWIDTH = "bandwidth"
VIR_DOMAIN_SNAPSHOT_CREATE_DISK_ONLY = 16
VIR_DOMAIN_SNAPSHOT_CREATE_REUSE_EXT = 32
VIR_DOMAIN_EVENT_ID_LIFECYCLE = 0
VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED = 15
VIR_ERR_INTERNAL_ERROR = 1
VIR_ERR_NO_SUPPORT = 3
VIR_ERR_OPERATION_FAILED = 9
VIR_ERR_INVALID_ARG = 8
VIR_ERR_XML_ERROR = 27
VIR_ERR_SYSTEM_ERROR = 38
VIR_ERR_NO_DOMAIN = 42
VIR_ERR_OPERATION_INVALID = 55
VIR_ERR_DEVICE_MISSING = 99
VIR_ERR_BLOCK_COPY_ACTIVE = 83
VIR_ERR_NO_SECRET = 66
VIR_ERR_OPERATION_ABORTED = 78
VIR_DOMAIN_XML_SECURE = 1
VIR_DOMAIN_XML_MIGRATABLE = 8


# The migration and secret constants live beside their code; the binding has
# every constant at the top level.
globals().update({name: value for module in (fake_migration, fake_secrets)
                  for name, value in vars(module).items() if name.startswith("VIR_")})


class libvirtError(Exception):  # noqa: N801 - the binding's name
    def __init__(self, msg, code=VIR_ERR_INTERNAL_ERROR):
        super().__init__(msg)
        self._code = code

    def get_error_code(self):
        return self._code

    def get_error_message(self):
        return str(self)


# path -> {(domain uuid, target dev): shareable}: QEMU's image locks.
_LOCKS: dict[str, dict[tuple[str, str], bool]] = {}
_LOCKS_GUARD = threading.Lock()


def _required(element: ET.Element, path: str) -> ET.Element:
    """``element.find(path)``, or the XML error libvirt gives when it is missing."""
    found = element.find(path)
    if found is None:
        raise libvirtError(f"XML error: <{element.tag}> lacks <{path}>", VIR_ERR_XML_ERROR)
    return found


_CHUNK = 4 << 20


def _data_ranges(fd, start, end):
    """(offset, end) of the data (not holes) of ``fd`` between ``start`` and ``end``."""
    offset = start
    while offset < end:
        try:
            data = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError:  # ENXIO: only a hole up to the end of the file
            return
        if data >= end:
            return
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
        yield data, hole
        offset = hole


def _copy_sparse(source, dest):
    """Make ``dest`` hold ``source``'s bytes, touching only data (as QEMU's mirror).

    Why not a plain copy: a swap onto a grown disk would write gigabytes of
    zeros into the test's temporary directory.
    """
    size = os.path.getsize(source)
    src = os.open(source, os.O_RDONLY)
    dst = os.open(dest, os.O_RDWR)
    try:
        offset = 0
        for data, hole in [*_data_ranges(src, 0, size), (size, size)]:
            # The source's hole before this data: zeros wherever dest has data.
            for zero_start, zero_end in list(_data_ranges(dst, offset, data)):
                for at in range(zero_start, zero_end, _CHUNK):
                    os.pwrite(dst, bytes(min(_CHUNK, zero_end - at)), at)
            for at in range(data, hole, _CHUNK):
                os.pwrite(dst, os.pread(src, min(_CHUNK, hole - at), at), at)
            offset = hole
    finally:
        os.close(src)
        os.close(dst)


def _luks1_payload_offset(path):
    """Bytes before a LUKS1 container's data: its header's payload offset (in sectors)."""
    with open(path, "rb") as f:
        header = f.read(108)
    if not header.startswith(b"LUKS\xba\xbe"):
        raise libvirtError(f"internal error: {path} holds no LUKS header", VIR_ERR_INTERNAL_ERROR)
    return int.from_bytes(header[104:108], "big") * 512


def _disk_path(disk):
    source = disk.find("source")
    if source is None:
        return None
    path = source.get("file") or source.get("dev")
    return os.path.realpath(path) if path else None


def _lock_disk(dom_uuid, disk):
    path = _disk_path(disk)
    if path is None:
        return
    if not os.path.exists(path):
        raise libvirtError(f"Could not open '{path}': No such file or directory",
                           VIR_ERR_SYSTEM_ERROR)
    shareable = disk.find("shareable") is not None
    target = disk.find("target").get("dev")
    with _LOCKS_GUARD:
        holders = _LOCKS.setdefault(path, {})
        for (other_uuid, _target), other_shareable in holders.items():
            if other_uuid != dom_uuid and not (shareable and other_shareable):
                raise libvirtError(
                    "internal error: unable to execute QEMU command 'device_add': "
                    'Failed to get "write" lock', VIR_ERR_INTERNAL_ERROR)
        holders[(dom_uuid, target)] = shareable


def _unlock_disk(dom_uuid, disk):
    path = _disk_path(disk)
    with _LOCKS_GUARD:
        holders = _LOCKS.get(path) or {}
        holders.pop((dom_uuid, disk.find("target").get("dev")), None)
        if not holders:
            _LOCKS.pop(path, None)


def _devices(root):
    return root.find("devices")


def _boot_disk(root):
    """The disk the firmware boots: the one with the lowest ``<boot order>``."""
    ordered = [(int(disk.find("boot").get("order")), disk) for disk in _disks(root)
               if disk.find("boot") is not None]
    return min(ordered, key=lambda item: item[0])[1] if ordered else None


def _console_log(root):
    """The file the domain's first serial port logs to, or None."""
    log = _devices(root).find("serial/log")
    return log.get("file") if log is not None else None


def _write_console(root):
    """What QEMU's serial log gets at start: a fixed text naming the boot disk.

    Deterministic, so tests can assert the console output end to end, and
    it names what the firmware booted from (target and serial) or says that
    nothing was bootable, as SeaBIOS does on the real serial console.
    """
    path = _console_log(root)
    if not path:
        return
    boot = _boot_disk(root)
    lines = [f"fake firmware: starting {root.findtext('name')} ({root.findtext('uuid')})"]
    if boot is None:
        lines += ["Booting from Hard Disk...", "No bootable device."]
    else:
        lines += [f"Booting from Hard Disk {boot.find('target').get('dev')} "
                  f"(serial {boot.findtext('serial')})...",
                  "fake guest: kernel started on ttyS0", "fake guest: ready"]
    log = _devices(root).find("serial/log")
    mode = "ab" if log.get("append") == "on" else "wb"
    with open(path, mode) as f:
        f.write("".join(f"{line}\r\n" for line in lines).encode())


def _disks(root):
    return _devices(root).findall("disk")


def _note_console(root, line):
    """Append ``line`` to the domain's console log (what its guest would print)."""
    path = _console_log(root)
    if path:
        with open(path, "ab") as f:
            f.write(f"{line}\r\n".encode())


def _alias(disk):
    alias = disk.find("alias")
    return alias.get("name") if alias is not None else None


def _matches(disk, wanted):
    """libvirt matches a detach request by alias, else by target dev."""
    if _alias(wanted):
        return _alias(disk) == _alias(wanted)
    return disk.find("target").get("dev") == wanted.find("target").get("dev")


class FakeDomain(fake_migration.MigratingDomain):
    def __init__(self, conn, root):
        self._conn = conn
        self._persistent = root
        self._live = None
        self._state = VIR_DOMAIN_SHUTOFF
        self._id = -1
        self._transient = False
        self._sizes = {}  # target dev -> capacity for non-file disks
        self._unplug_pending = set()  # id() of live virtio disks awaiting the guest
        self._pivots = {}  # target dev -> base of an active commit waiting to pivot
        # target dev -> (destination file, its <source>) of a block copy (swap volume)
        self._copies = {}
        self.copy_params = {}  # target dev -> typed parameters of its last block copy

    # -- identity and state ---------------------------------------------------
    def UUIDString(self):  # noqa: N802 - the binding's names
        return self._persistent.find("uuid").text

    def name(self):
        return self._persistent.find("name").text

    def ID(self):  # noqa: N802
        return self._id

    def state(self, flags=0):
        return [self._state, 1]

    def info(self):
        mem = int(self._persistent.find("memory").text)
        return [self._state, mem, mem, int(self._persistent.find("vcpu").text), 0]

    def isActive(self):  # noqa: N802
        # NOTE: as libvirt: the handle of a domain that is gone (undefined
        # while stopped, migrated away) answers "Domain not found".
        if self._live is None and self._conn.domains.get(self.UUIDString()) is not self:
            raise libvirtError(f"Domain not found: no domain with matching uuid "
                               f"'{self.UUIDString()}'", VIR_ERR_NO_DOMAIN)
        return int(self._live is not None)

    def _require_active(self):
        if self._live is None:
            raise libvirtError("Requested operation is not valid: domain is not running",
                               VIR_ERR_OPERATION_INVALID)

    def XMLDesc(self, flags=0):  # noqa: N802
        if self._live is None or flags & VIR_DOMAIN_XML_INACTIVE:
            return ET.tostring(self._persistent, encoding="unicode")
        return ET.tostring(self._live, encoding="unicode")

    # -- lifecycle ------------------------------------------------------------
    def create(self):
        if self._live is not None:
            raise libvirtError("Requested operation is not valid: domain is already running",
                               VIR_ERR_OPERATION_INVALID)
        live = copy.deepcopy(self._persistent)
        locked = []
        try:
            for disk in _disks(live):
                _lock_disk(self.UUIDString(), disk)
                locked.append(disk)
        except libvirtError:
            for disk in locked:
                _unlock_disk(self.UUIDString(), disk)
            raise
        self._live = live
        self._id = next(self._conn.ids)
        self._state = VIR_DOMAIN_RUNNING
        _write_console(live)
        return 0

    def destroy(self):
        self._require_active()
        for disk in _disks(self._live):
            _unlock_disk(self.UUIDString(), disk)
        self._live = None
        self._unplug_pending.clear()
        self._id = -1
        self._state = VIR_DOMAIN_SHUTOFF
        if self._transient:
            self._conn.domains.pop(self.UUIDString(), None)
        return 0

    def undefine(self):
        if self._live is not None:
            self._transient = True  # lives on until destroyed, like libvirt
        else:
            self._conn.domains.pop(self.UUIDString(), None)
        return 0

    def undefineFlags(self, flags=0):  # noqa: N802
        return self.undefine()

    def reset(self, flags=0):
        """A reset completes pending unplugs (the virtio detach trap)."""
        self._require_active()
        for disk in list(_disks(self._live)):
            if id(disk) in self._unplug_pending:
                self._remove_live(disk)
        return 0

    def reboot(self, flags=0):
        self._require_active()
        return 0

    def suspend(self):
        self._require_active()
        self._state = VIR_DOMAIN_PAUSED
        return 0

    def resume(self):
        self._require_active()
        self._state = VIR_DOMAIN_RUNNING
        return 0

    # -- devices --------------------------------------------------------------
    def _targets(self, live, persistent):
        if not (live or persistent):  # VIR_DOMAIN_AFFECT_CURRENT
            live, persistent = self._live is not None, self._live is None
        if live:
            self._require_active()
        return live, persistent

    def attachDeviceFlags(self, xml, flags=0):  # noqa: N802
        disk = ET.fromstring(xml)
        if disk.tag != "disk":
            raise libvirtError(f"fake libvirt only attaches disks, not {disk.tag}",
                               VIR_ERR_NO_SUPPORT)
        live, persistent = self._targets(flags & VIR_DOMAIN_AFFECT_LIVE,
                                         flags & VIR_DOMAIN_AFFECT_CONFIG)
        dev = _required(disk, "target").get("dev")
        for root in ([self._live] if live else []) + ([self._persistent] if persistent else []):
            for other in _disks(root):
                if other.find("target").get("dev") == dev:
                    raise libvirtError(f"operation failed: target {dev} already exists",
                                       VIR_ERR_OPERATION_FAILED)
                if _alias(disk) and _alias(other) == _alias(disk):
                    raise libvirtError(f"non unique alias detected: {_alias(disk)}",
                                       VIR_ERR_OPERATION_FAILED)
        if live:
            self._check_encryption_secret(disk)
            _lock_disk(self.UUIDString(), disk)
            _devices(self._live).append(copy.deepcopy(disk))
        if persistent:
            _devices(self._persistent).append(copy.deepcopy(disk))
        return 0

    def _check_encryption_secret(self, disk):
        """As QEMU: a LUKS disk opens only with its secret defined and holding a value."""
        secret = disk.find("source/encryption/secret")
        if secret is None:
            return
        try:
            value = self._conn.secretLookupByUUIDString(secret.get("uuid")).value
        except libvirtError:
            value = None
        if not value:
            raise libvirtError(f"internal error: no secret with uuid {secret.get('uuid')} "
                               "holding a value", VIR_ERR_NO_SECRET)

    def _remove_live(self, disk):
        self._unplug_pending.discard(id(disk))
        _unlock_disk(self.UUIDString(), disk)
        _devices(self._live).remove(disk)
        self._conn.emit_device_removed(self, _alias(disk) or disk.find("target").get("dev"))

    def detachDeviceFlags(self, xml, flags=0):  # noqa: N802
        wanted = ET.fromstring(xml)
        live, persistent = self._targets(flags & VIR_DOMAIN_AFFECT_LIVE,
                                         flags & VIR_DOMAIN_AFFECT_CONFIG)
        found = {}
        for key, root in (("live", self._live if live else None),
                          ("config", self._persistent if persistent else None)):
            if root is None:
                continue
            match = next((d for d in _disks(root) if _matches(d, wanted)), None)
            if match is None:
                raise libvirtError("device not found: no disk matching the request",
                                   VIR_ERR_DEVICE_MISSING)
            found[key] = match
        if "config" in found:
            _devices(self._persistent).remove(found["config"])
        if "live" in found:
            disk = found["live"]
            if disk.find("target").get("bus") == "virtio":
                # NOTE: virtio-blk unplug waits for the guest OS, which we lack.
                self._unplug_pending.add(id(disk))
            else:
                self._remove_live(disk)
        return 0

    def _find_live_disk(self, disk_name):
        self._require_active()
        for disk in _disks(self._live):
            if disk.find("target").get("dev") == disk_name or _disk_path(disk) == disk_name:
                return disk
        raise libvirtError(f"invalid argument: disk '{disk_name}' was not found",
                           VIR_ERR_INVALID_ARG)

    def blockResize(self, disk_name, size, flags=0):  # noqa: N802
        disk = self._find_live_disk(disk_name)
        size = size if flags & VIR_DOMAIN_BLOCK_RESIZE_BYTES else size * 1024
        path = _disk_path(disk)
        if disk.get("type") == "file" and path:
            os.truncate(path, size)
        else:
            self._sizes[disk.find("target").get("dev")] = size
        return 0

    def _set_source(self, disk_name, path):
        """Point the live and persistent disk at ``path`` (a new active file)."""
        for root in (self._live, self._persistent):
            for disk in _disks(root) if root is not None else ():
                if disk.find("target").get("dev") == disk_name:
                    disk.find("source").set("file", path)

    def snapshotCreateXML(self, xml, flags=0):  # noqa: N802
        """External disk-only snapshots into existing files (REUSE_EXT) only."""
        self._require_active()
        wanted = VIR_DOMAIN_SNAPSHOT_CREATE_DISK_ONLY | VIR_DOMAIN_SNAPSHOT_CREATE_REUSE_EXT
        if flags & wanted != wanted:
            raise libvirtError("fake libvirt only takes disk-only, reuse-ext snapshots",
                               VIR_ERR_NO_SUPPORT)
        for disk in ET.fromstring(xml).iter("disk"):
            if disk.get("snapshot") != "external":
                continue
            path = _required(disk, "source").get("file")
            if path is None or not os.path.exists(path):
                raise libvirtError(f"cannot open {path}: No such file", VIR_ERR_SYSTEM_ERROR)
            self._find_live_disk(disk.get("name"))
            self._set_source(disk.get("name"), path)
        return None

    def blockRebase(self, disk_name, base, bandwidth=0, flags=0):  # noqa: N802
        self._find_live_disk(disk_name)  # the pull finishes at once here
        return 0

    def blockCommit(self, disk_name, base, top, bandwidth=0, flags=0):  # noqa: N802
        """Commits finish at once; committing the active image waits for a pivot."""
        disk = self._find_live_disk(disk_name)
        if top and os.path.realpath(top) == _disk_path(disk):
            if not flags & VIR_DOMAIN_BLOCK_COMMIT_ACTIVE:
                raise libvirtError("invalid argument: commit of the active layer needs "
                                   "VIR_DOMAIN_BLOCK_COMMIT_ACTIVE", VIR_ERR_INVALID_ARG)
            self._pivots[disk_name] = base
        return 0

    def blockCopy(self, disk_name, destxml, params=None, flags=0):  # noqa: N802
        """A copy into an existing file; ready at once, the data moves at the pivot.

        As libvirt with TRANSIENT_JOB: only the live disk changes at the
        pivot, the persistent definition keeps the old source.
        """
        disk = self._find_live_disk(disk_name)
        if disk_name in self._copies or disk_name in self._pivots:
            raise libvirtError(f"block copy still active: disk '{disk_name}' already in "
                               "active block job", VIR_ERR_BLOCK_COPY_ACTIVE)
        if not self._transient and not flags & VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB:
            raise libvirtError("Requested operation is not valid: domain is not transient",
                               VIR_ERR_OPERATION_INVALID)
        dest = _disk_path(ET.fromstring(destxml))
        if not flags & VIR_DOMAIN_BLOCK_COPY_REUSE_EXT or dest is None or \
                not os.path.exists(dest):
            raise libvirtError(f"cannot open {dest}: the fake copies into existing files "
                               "only", VIR_ERR_SYSTEM_ERROR)
        if _disk_path(disk) is None:
            raise libvirtError("the fake copies file-backed disks only", VIR_ERR_NO_SUPPORT)
        # As QEMU's mirror: one size on both sides, never a larger destination
        # (of a LUKS one its payload; the fake does not encrypt what it copies).
        dest_source = _required(ET.fromstring(destxml), "source")
        luks = dest_source.find("encryption") is not None
        if os.path.getsize(_disk_path(disk)) != os.path.getsize(dest) - (
                _luks1_payload_offset(dest) if luks else 0):
            raise libvirtError("internal error: unable to execute QEMU command "
                               "'blockdev-mirror': Source and target image have different "
                               "sizes", VIR_ERR_INTERNAL_ERROR)
        self._copies[disk_name] = (dest, dest_source)
        self.copy_params[disk_name] = dict(params or {})
        return 0

    def blockJobInfo(self, disk_name, flags=0):  # noqa: N802
        # An active commit or a copy sits "ready" (cur == end) until pivoted.
        if disk_name in self._copies:
            return {"type": 2, "bandwidth": 0, "cur": 1, "end": 1}
        return {"type": 4, "bandwidth": 0, "cur": 1, "end": 1} \
            if disk_name in self._pivots else {}

    def blockJobAbort(self, disk_name, flags=0):  # noqa: N802
        dest, dest_source = self._copies.pop(disk_name, (None, None))
        if dest is not None and flags & VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT:
            disk = self._find_live_disk(disk_name)
            _copy_sparse(_disk_path(disk), dest)
            # As libvirt: the disk takes the destination's <source>, its
            # <encryption> (or none) included.
            source = _required(disk, "source")
            disk.insert(list(disk).index(source), dest_source)
            disk.remove(source)
        base = self._pivots.pop(disk_name, None)
        if base is not None and flags & VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT:
            self._set_source(disk_name, base)
        return 0

    def blockInfo(self, disk_name, flags=0):  # noqa: N802
        disk = self._find_live_disk(disk_name)
        path = _disk_path(disk)
        if disk.get("type") == "file" and path:
            size = os.path.getsize(path)
            return [size, os.stat(path).st_blocks * 512, size]
        size = self._sizes.get(disk.find("target").get("dev"), 0)
        return [size, size, size]


class FakeConnection(fake_secrets.SecretTable):
    def __init__(self, state, uri, module=None):
        self._state = state
        self.uri = uri
        self.alive = True
        self._module = module

    def getInfo(self):  # noqa: N802
        """virConnectGetInfo: [model, memory MiB, CPUs, MHz, nodes, sockets, cores, threads]."""
        self._check()
        memory, cpus = self._module.host_info if self._module else (65536, 32)
        return ["x86_64", memory, cpus, 2000, 1, 1, cpus, 1]

    @property
    def domains(self):
        return self._state["domains"]

    @property
    def ids(self):
        return self._state["ids"]

    def _check(self):
        if not self.alive:
            raise libvirtError("internal error: client socket is closed",
                               VIR_ERR_SYSTEM_ERROR)

    def isAlive(self):  # noqa: N802
        return int(self.alive)

    def close(self):
        self.alive = False
        return 0

    def setKeepAlive(self, interval, count):  # noqa: N802
        return 0

    def getLibVersion(self):  # noqa: N802
        return 9000000

    def registerCloseCallback(self, cb, opaque):  # noqa: N802
        return 0

    def domainEventRegisterAny(self, dom, event_id, cb, opaque):  # noqa: N802
        callback_id = next(self._state["ids"])
        self._state["callbacks"][callback_id] = (event_id, cb, opaque, self)
        return callback_id

    def domainEventDeregisterAny(self, callback_id):  # noqa: N802
        self._state["callbacks"].pop(callback_id, None)
        return 0

    def emit_device_removed(self, dom, dev_alias):
        for event_id, cb, opaque, conn in list(self._state["callbacks"].values()):
            if event_id == VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED and conn.alive:
                cb(conn, dom, dev_alias, opaque)

    def defineXML(self, xml):  # noqa: N802
        self._check()
        root = ET.fromstring(xml)
        if root.tag != "domain" or root.get("type") not in ("qemu", "kvm"):
            raise libvirtError("XML error: expected <domain type='qemu|kvm'>",
                               VIR_ERR_XML_ERROR)
        if root.find("uuid") is None:
            ET.SubElement(root, "uuid").text = str(uuidlib.uuid4())
        uuid, name = _required(root, "uuid").text, _required(root, "name").text
        # NOTE: libvirtd checks the name and adds the domain as one step; a
        # compute defines several domains at once (max_concurrent_builds), and
        # iterating the table while another define adds to it raised
        # "dictionary changed size during iteration" (benchmark, N=1000).
        with self._state["lock"]:
            for dom in list(self.domains.values()):
                if dom.name() == name and dom.UUIDString() != uuid:
                    raise libvirtError(f"operation failed: domain '{name}' already exists "
                                       f"with uuid {dom.UUIDString()}",
                                       VIR_ERR_OPERATION_FAILED)
            dom = self.domains.get(uuid)
            if dom is None:
                dom = self.domains[uuid] = FakeDomain(self, root)
            else:
                dom._persistent = root
                dom._transient = False
        return dom

    def lookupByUUIDString(self, uuid):  # noqa: N802
        self._check()
        try:
            return self.domains[uuid]
        except KeyError:
            raise libvirtError(f"Domain not found: no domain with matching uuid '{uuid}'",
                               VIR_ERR_NO_DOMAIN) from None

    def lookupByName(self, name):  # noqa: N802
        self._check()
        for dom in list(self.domains.values()):
            if dom.name() == name:
                return dom
        raise libvirtError(f"Domain not found: no domain with matching name '{name}'",
                           VIR_ERR_NO_DOMAIN)

    def listAllDomains(self, flags=0):  # noqa: N802
        self._check()
        return list(self.domains.values())


# The mixins of the two classes reach this module's errors and helpers here
# (they cannot import it: it imports them).
FakeDomain._binding = FakeConnection._binding = sys.modules[__name__]


class FakeLibvirt:
    """Module-like object: constants, ``libvirtError``, ``open`` and event hooks.

    Domains are kept per URI, so reopening a URI (reconnect) finds them again,
    as with an embedded root whose QEMU processes outlive the connection.
    """

    libvirtError = libvirtError

    def __init__(self):
        self._hosts = {}
        # (memory MiB, CPUs) of virConnectGetInfo; the FakeDriver sets them from [virt].
        self.host_info = (65536, 32)
        # How long a live migration from this host takes, and the error it
        # then fails with (None: it succeeds): knobs for tests.
        self.migration_seconds = 0.0
        self.migration_error = None
        self._no_events = threading.Event()

    def __getattr__(self, name):
        if name.startswith("VIR_"):
            return globals()[name]
        raise AttributeError(name)

    def getVersion(self):  # noqa: N802
        return 9000000

    def registerErrorHandler(self, handler, ctx):  # noqa: N802
        return 0

    def virEventRegisterDefaultImpl(self):  # noqa: N802
        return 0

    def virEventRunDefaultImpl(self):  # noqa: N802
        # Events are delivered synchronously: nothing ever comes to this loop,
        # so its thread blocks for good instead of waking every second (a
        # process that makes many of these, a test run, would keep hundreds
        # of threads polling, all on one GIL).
        self._no_events.wait()
        return 0

    def open(self, uri):
        if not uri or not uri.startswith(("qemu://", "qemu+", "test://")):
            raise libvirtError(f"no connection driver available for {uri}",
                               VIR_ERR_NO_SUPPORT)
        state = self._hosts.setdefault(
            uri, {"domains": {}, "ids": itertools.count(1), "callbacks": {},
                  "lock": threading.Lock(), "secrets": {}})
        return FakeConnection(state, uri, self)


class FakeDriver(libvirt_driver.LibvirtDriver):
    """The LibvirtDriver on :class:`FakeLibvirt`: real driver logic, no QEMU."""

    def __init__(self, conf, libvirt_module=None, host=None):
        super().__init__(conf, libvirt_module=libvirt_module or FakeLibvirt(), host=host)
        if isinstance(self.libvirt, FakeLibvirt):
            self.libvirt.host_info = (conf.virt.fake_host_memory_mb, conf.virt.fake_host_vcpus)
        #: instance uuid -> (ISO path, {file: bytes}) of the last config drive
        #: made for it: what the guest would read, without mounting the ISO.
        self.config_drives = {}

        fake_migration.TARGETS[self._migration_uri()] = (self.libvirt,
                                                         conf.libvirt.connection_uri)

    def _migration_uri(self):
        return f"fake+migrate://{self.conf.host}"

    def live_migration_target(self):
        return {"uri": self._migration_uri()}

    def made_config_drive(self, instance, iso_path, files):
        self.config_drives[instance["uuid"]] = (iso_path, dict(files))
