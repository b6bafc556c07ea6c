"""Guest device names and the small helpers shared by every driver.

Nova's libvirt driver names disks by bus: ``vdX`` for virtio, ``sdX`` for
scsi/sata/usb, ``hdX`` for ide. Names past ``z`` continue as ``aa``, ``ab``
like the kernel does, so the 27th virtio disk is ``vdaa``.
"""

import string

from volumesvc import exception

BUS_PREFIX = {
    "virtio": "vd",
    "scsi": "sd",
    "sata": "sd",
    "usb": "sd",
    "ide": "hd",
    "xen": "xvd",
}

DEFAULT_VOLUME_BUS = "scsi"


def prefix_for_bus(bus):
    try:
        return BUS_PREFIX[bus]
    except KeyError:
        raise exception.Invalid(reason=f"unsupported disk bus {bus!r}") from None


def strip_dev(name):
    """'/dev/sdb' -> 'sdb'."""
    return name[5:] if name and name.startswith("/dev/") else name


def index_to_suffix(index):
    """0 -> 'a', 25 -> 'z', 26 -> 'aa' (kernel disk naming)."""
    letters = string.ascii_lowercase
    suffix = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        suffix = letters[rem] + suffix
    return suffix


def suffix_to_index(suffix):
    """Inverse of :func:`index_to_suffix`; None when not all lowercase letters."""
    if not suffix or not suffix.isalpha() or not suffix.islower():
        return None
    index = 0
    for char in suffix:
        index = index * 26 + (ord(char) - ord("a") + 1)
    return index - 1


def get_next_device_name(used_names, bus=DEFAULT_VOLUME_BUS, limit=702):
    """Return the first free '/dev/<prefix><letters>' for ``bus``.

    ``used_names`` may mix buses and carry or omit '/dev/'; only names with
    this bus' prefix count. ``limit`` bounds the search (sda..szz).
    """
    prefix = prefix_for_bus(bus)
    taken = set()
    for name in used_names or ():
        name = strip_dev(name)
        if name and name.startswith(prefix):
            idx = suffix_to_index(name[len(prefix):])
            if idx is not None:
                taken.add(idx)
    for idx in range(limit):
        if idx not in taken:
            return f"/dev/{prefix}{index_to_suffix(idx)}"
    raise exception.Invalid(reason=f"no free device name on bus {bus}")


def unit_for_device(dev):
    """SCSI unit number of 'sdX': sda -> 0, sdb -> 1 (None for other names)."""
    name = strip_dev(dev)
    if not name or not name.startswith("sd"):
        return None
    return suffix_to_index(name[2:])


def volume_id(connection_info):
    """The Cinder volume id: ``serial``, else ``data.volume_id``."""
    return (connection_info.get("serial")
            or (connection_info.get("data") or {}).get("volume_id"))


def is_multiattach(connection_info):
    return bool(connection_info.get("multiattach"))


def is_read_only(connection_info):
    """Whether the guest must get the volume read-only.

    Either field says so: Cinder's ``data.access_mode`` comes from the
    volume's read-only flag only, while a read-only attachment (Cinder's
    ``mode``, volume API 3.54) shows in the attachment's ``attach_mode``,
    which Cinder 29 does not copy into ``access_mode``. Reading only
    ``access_mode`` would give such an attachment a writable disk
    (doc/source/contributor/contract.rst §13).
    """
    data = connection_info.get("data") or {}
    return data.get("access_mode") == "ro" or connection_info.get("attach_mode") == "ro"


def attach_mode(bdm):
    """The mode a new Cinder attachment for ``bdm`` asks for: ``ro`` or Cinder's default.

    A read-only BDM (API 2.108) stays read-only through every attachment
    made for it again (shelve offload, swap, rebuild). ``bdm``: the
    conductor's object or the compute's view (``compute/bdm.py``); both
    name the flag ``read_only``.
    """
    return "ro" if bdm.read_only else None


def keep_read_only(connection_info, bdm):
    """Mark Cinder's ``connection_info`` read-only when ``bdm`` is; returns it.

    Cinder's answer for a read-only attachment may say ``access_mode: rw``
    (and an older Cinder may not show ``attach_mode``); the user asked for
    a read-only disk, so the guest gets one whatever Cinder says.
    """
    if bdm.read_only:
        connection_info["attach_mode"] = "ro"
    return connection_info


def get_bdms(block_device_info):
    return list((block_device_info or {}).get("block_device_mapping") or [])
