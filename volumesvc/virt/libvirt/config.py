"""libvirt guest XML objects: a domain, its disks and its serial console.

Plain dataclasses that render to ElementTree, so tests can assert on fields
and on XML alike. Policy (cache modes, multiattach, which source type a
Cinder connection maps to) lives in the ``volume`` package; this module only knows
libvirt's XML vocabulary.
"""

import copy
import dataclasses
import xml.etree.ElementTree as ET

DISK_ALIAS_PREFIX = "ua-"


def volume_alias(volume_id):
    """User alias of a volume disk: lets detach find it without the device name."""
    return f"{DISK_ALIAS_PREFIX}{volume_id}"


def to_string(element):
    return ET.tostring(element, encoding="unicode")


def _present(**attrs: str | None) -> dict[str, str]:
    """The attributes that have a value: ElementTree cannot write None."""
    return {key: value for key, value in attrs.items() if value is not None}


@dataclasses.dataclass
class DiskConfig:
    """One ``<disk>``; fields left None are not written."""

    source_type: str = "file"  # file | block | network
    device: str = "disk"  # disk | cdrom | lun
    target_dev: str = "sda"
    target_bus: str = "scsi"
    driver_name: str = "qemu"
    driver_format: str = "raw"
    driver_cache: str | None = None
    driver_io: str | None = None
    driver_discard: str | None = None
    source_path: str | None = None  # file or block device
    source_protocol: str | None = None  # network: rbd, ...
    source_name: str | None = None
    source_hosts: list = dataclasses.field(default_factory=list)  # [(name, port)]
    auth_username: str | None = None
    auth_secret_type: str | None = None
    auth_secret_uuid: str | None = None
    serial: str | None = None
    alias: str | None = None
    shareable: bool = False
    readonly: bool = False
    scsi_unit: int | None = None
    boot_order: int | None = None
    iotune: dict = dataclasses.field(default_factory=dict)
    # QEMU's native LUKS: the libvirt secret holding the volume's passphrase.
    encryption_secret_uuid: str | None = None

    def _source(self, disk):
        if self.source_type == "file":
            source = ET.SubElement(disk, "source", _present(file=self.source_path))
        elif self.source_type == "block":
            source = ET.SubElement(disk, "source", _present(dev=self.source_path))
        else:
            source = ET.SubElement(disk, "source", _present(protocol=self.source_protocol,
                                                            name=self.source_name))
            for name, port in self.source_hosts:
                ET.SubElement(source, "host", _present(name=str(name),
                                                       port=str(port) if port else None))
            if self.auth_username:
                auth = ET.SubElement(disk, "auth", username=self.auth_username)
                ET.SubElement(auth, "secret", _present(type=self.auth_secret_type,
                                                       uuid=self.auth_secret_uuid))
        if self.encryption_secret_uuid:
            # Inside <source>, where libvirt keeps it for every source type.
            encryption = ET.SubElement(source, "encryption", format="luks")
            ET.SubElement(encryption, "secret", type="passphrase",
                          uuid=self.encryption_secret_uuid)

    def to_element(self):
        disk = ET.Element("disk", type=self.source_type, device=self.device)
        ET.SubElement(disk, "driver", _present(
            name=self.driver_name, type=self.driver_format, cache=self.driver_cache or None,
            io=self.driver_io or None, discard=self.driver_discard or None))
        if self.alias:
            ET.SubElement(disk, "alias", name=self.alias)
        self._source(disk)
        ET.SubElement(disk, "target", dev=self.target_dev, bus=self.target_bus)
        if self.iotune:
            iotune = ET.SubElement(disk, "iotune")
            for key, value in sorted(self.iotune.items()):
                ET.SubElement(iotune, key).text = str(value)
        # NOTE: libvirt rejects <serial> on a lun (doc/source/contributor/contract.rst §13).
        if self.serial and self.device != "lun":
            ET.SubElement(disk, "serial").text = self.serial
        if self.boot_order is not None:
            ET.SubElement(disk, "boot", order=str(self.boot_order))
        if self.readonly:
            ET.SubElement(disk, "readonly")
        if self.shareable:
            ET.SubElement(disk, "shareable")
        if self.scsi_unit is not None and self.target_bus == "scsi":
            ET.SubElement(disk, "address", type="drive", controller="0", bus="0",
                          target="0", unit=str(self.scsi_unit))
        return disk

    def to_xml(self):
        return to_string(self.to_element())


# The config drive's CD-ROM: an "hd" name, which no volume (sd*, vd*) takes.
CONFIG_DRIVE_DEV = "hda"


def config_drive_bus(machine: str | None) -> str:
    """The CD-ROM's bus on ``machine``: q35 has no IDE controller, only SATA."""
    return "sata" if machine and "q35" in machine else "ide"


def config_drive_disk(path: str, machine: str | None = None) -> DiskConfig:
    """The read-only CD-ROM ``<disk>`` of the config drive ISO at ``path``."""
    return DiskConfig(source_type="file", device="cdrom", target_dev=CONFIG_DRIVE_DEV,
                      target_bus=config_drive_bus(machine), driver_format="raw",
                      source_path=path, readonly=True)


@dataclasses.dataclass
class SerialConsoleConfig:
    """The first serial port (the guest's ttyS0), its output logged to a host file.

    A ``pty`` with a ``<log>``, as Nova's libvirt driver writes it: under
    libvirtd, virtlogd writes the log and rotates it (``console.log.0``...),
    so a chatty guest cannot fill the host; the embedded driver has QEMU
    write it. ``append='off'``: every QEMU start (a hard reboot, a start, an
    unshelve) begins a new log, as Nova's does; a soft reboot keeps QEMU, so
    it keeps the log. The ``<console>`` is the same port (libvirt's
    shorthand), so ``virsh console`` reaches it too.
    """

    log_path: str

    def to_elements(self):
        serial = ET.Element("serial", type="pty")
        ET.SubElement(serial, "log", file=self.log_path, append="off")
        ET.SubElement(serial, "target", port="0")
        console = ET.Element("console", type="pty")
        ET.SubElement(console, "log", file=self.log_path, append="off")
        ET.SubElement(console, "target", type="serial", port="0")
        return [serial, console]


def console_log_path(domain_xml):
    """The file the first serial port of a domain XML logs to, or None.

    Reads what :class:`SerialConsoleConfig` writes, and also a ``file``
    serial port (libvirt's other way to keep a serial port's output), so a
    domain defined by hand or by an older compute is served as well.
    """
    root = ET.fromstring(domain_xml)
    for serial in root.findall("./devices/serial"):
        target = serial.find("target")
        if target is not None and target.get("port", "0") != "0":
            continue
        log = serial.find("log")
        if log is not None and log.get("file"):
            return log.get("file")
        source = serial.find("source")
        if serial.get("type") == "file" and source is not None and source.get("path"):
            return source.get("path")
    return None


@dataclasses.dataclass
class DomainConfig:
    """A guest booting from its boot-order-1 disk, with a virtio-scsi controller for volumes.

    ``console`` adds the serial console; the firmware then also writes to it
    (SeaBIOS's ``useserial``), so the log says why a server whose disks hold
    no operating system did not boot, and what it tried.
    """

    uuid: str
    name: str
    virt_type: str = "qemu"
    memory_mb: int = 64
    vcpus: int = 1
    disks: list = dataclasses.field(default_factory=list)
    console: SerialConsoleConfig | None = None
    # None: libvirt's default machine type (``pc`` on x86_64).
    machine: str | None = None

    def to_element(self):
        domain = ET.Element("domain", type=self.virt_type)
        ET.SubElement(domain, "name").text = self.name
        ET.SubElement(domain, "uuid").text = self.uuid
        ET.SubElement(domain, "memory", unit="KiB").text = str(self.memory_mb * 1024)
        ET.SubElement(domain, "vcpu").text = str(self.vcpus)
        os_el = ET.SubElement(domain, "os")
        ET.SubElement(os_el, "type", _present(machine=self.machine)).text = "hvm"
        if self.console is not None:
            ET.SubElement(os_el, "bios", useserial="yes")
        # NOTE: without ACPI, PCI hotplug (so live attach) fails: see "libvirt and QEMU"
        # in doc/source/contributor/dependencies.rst.
        features = ET.SubElement(domain, "features")
        ET.SubElement(features, "acpi")
        for event, action in (("on_poweroff", "destroy"), ("on_reboot", "restart"),
                              ("on_crash", "destroy")):
            ET.SubElement(domain, event).text = action
        devices = ET.SubElement(domain, "devices")
        ET.SubElement(devices, "controller", type="scsi", index="0", model="virtio-scsi")
        for disk in self.disks:
            devices.append(disk.to_element())
        if self.console is not None:
            devices.extend(self.console.to_elements())
        # NOTE: no balloon and no graphics: nothing in the guest would use them.
        ET.SubElement(devices, "memballoon", model="none")
        return domain

    def to_xml(self):
        return to_string(self.to_element())


@dataclasses.dataclass
class DiskInfo:
    """What a domain's XML says about one disk (parsed back, for callers/tests)."""

    target_dev: str | None
    target_bus: str | None
    source_type: str | None
    source: str | None
    serial: str | None
    alias: str | None
    shareable: bool
    readonly: bool
    cache: str | None
    io: str | None
    xml: str
    source_protocol: str | None = None  # network disks: rbd, ...
    # QEMU decrypts it: <encryption format='luks'> in its source.
    encrypted: bool = False


def _detached_string(element):
    element = copy.deepcopy(element)
    element.tail = None  # the indentation after the element in the domain XML
    return to_string(element)


def parse_disks(domain_xml):
    """Every ``<disk>`` of a domain XML string as :class:`DiskInfo`."""
    root = ET.fromstring(domain_xml)
    disks = []
    for disk in root.findall("./devices/disk"):
        target = disk.find("target")
        source = disk.find("source")
        driver = disk.find("driver")
        alias = disk.find("alias")
        serial = disk.find("serial")
        src = None
        if source is not None:
            src = source.get("file") or source.get("dev") or source.get("name")
        disks.append(DiskInfo(
            target_dev=target.get("dev") if target is not None else None,
            target_bus=target.get("bus") if target is not None else None,
            source_type=disk.get("type"),
            source=src,
            serial=serial.text if serial is not None else None,
            alias=alias.get("name") if alias is not None else None,
            shareable=disk.find("shareable") is not None,
            readonly=disk.find("readonly") is not None,
            cache=driver.get("cache") if driver is not None else None,
            io=driver.get("io") if driver is not None else None,
            xml=_detached_string(disk),
            source_protocol=source.get("protocol") if source is not None else None,
            encrypted=(source is not None
                       and source.find("encryption[@format='luks']") is not None),
        ))
    return disks
