"""block_device_mapping_v2 at boot: Nova's checks, doc/source/contributor/contract.rst §4.2.

Three steps, each pure apart from the reads it names:

1. :func:`from_api` turns request items into internal BDM dicts and applies
   the per-item format rules (device uuid, image→local, volume_type
   placement), like Nova's ``BlockDeviceDict.from_api``.
2. :func:`image_defined` reads the mappings a volume-backed snapshot image
   carries (``bdm_v2`` + ``block_device_mapping`` JSON), and :func:`merge`
   combines them with the request, adding the image→local root disk of an
   image-backed boot.
3. :func:`validate` checks the combined list against the deployment: boot
   sequence, the minimum compute version and the volume type lookup, the
   images, snapshots and volumes in Glance/Cinder, multiattach and AZ rules,
   and local disk limits. It creates nothing; ``logic/build.py`` does.

Internal BDM dicts use the ``block_device_mappings`` column names.
"""

import dataclasses
import json

from oslo_utils import strutils

from volumesvc import exception
from volumesvc.api import microversions as mv
from volumesvc.api import validation
from volumesvc.api.logic import ownership

# Nova's [DEFAULT] max_local_block_devices default.
MAX_LOCAL_BLOCK_DEVICES = 3
DISK_BUSES = frozenset({"fdc", "ide", "sata", "scsi", "usb", "virtio", "xen", "lxc", "uml"})
# Keys an image-defined mapping may carry into the instance's BDMs.
_BDM_KEYS = ("source_type", "destination_type", "boot_index", "device_name", "device_type",
             "disk_bus", "guest_format", "volume_id", "snapshot_id", "image_id",
             "volume_size", "volume_type", "delete_on_termination", "tag")


def _boot_index(value):
    """Nova: a missing or null boot_index means "not bootable" (-1)."""
    if value is None:
        return -1
    return validation.bounded_int(value, "boot_index", -validation.MAX_INT - 1)


def _normalize(item: dict) -> dict:
    bdm = {key: item.get(key) for key in _BDM_KEYS}
    bdm["boot_index"] = _boot_index(item.get("boot_index"))
    bdm["delete_on_termination"] = strutils.bool_from_string(
        item.get("delete_on_termination", False))
    if bdm["volume_size"] is not None:
        bdm["volume_size"] = validation.bounded_int(bdm["volume_size"], "volume_size", 1)
    # "" and null both mean "no type" (doc/source/contributor/contract.rst §4.2 rule 3).
    bdm["volume_type"] = bdm["volume_type"] or None
    return bdm


def from_api(items, image_uuid_specified: bool) -> list[dict]:
    """Rules 1-3 of §4.2 on the request's items; returns internal BDM dicts."""
    bdms = []
    for item in items:
        item = dict(item)
        if strutils.bool_from_string(item.get("no_device", False)):
            continue
        source_type = item.get("source_type")
        destination_type = item.get("destination_type")
        device_uuid = item.pop("uuid", None)
        if source_type == "blank" and device_uuid:
            raise exception.InvalidBDMFormat(details="Invalid device UUID.")
        if source_type != "blank":
            if not device_uuid:
                raise exception.InvalidBDMFormat(details="Missing device UUID.")
            item[f"{source_type}_id"] = device_uuid
        if source_type == "image" and destination_type == "local":
            # Only the root disk of an image-backed boot (what clients add for --image).
            if not (image_uuid_specified and _boot_index(item.get("boot_index")) == 0):
                raise exception.InvalidBDMFormat(
                    details="Mapping image to local is not supported.")
        if item.get("volume_type"):
            if destination_type == "local":
                raise exception.InvalidBDMFormat(
                    details="Specifying a volume_type with destination_type=local is not "
                            "supported.")
            if source_type == "volume":
                raise exception.InvalidBDMFormat(
                    details="Specifying volume type to existing volume is not supported.")
        bdms.append(_normalize(item))
    return bdms


def image_defined(image) -> list[dict]:
    """The mappings of a volume-backed snapshot image (createImage), or []."""
    properties = (image or {}).get("properties") or {}
    if not strutils.bool_from_string(properties.get("bdm_v2", False)):
        return []
    mappings = properties.get("block_device_mapping") or []
    if isinstance(mappings, str):
        try:
            mappings = json.loads(mappings)
        except ValueError as exc:
            raise exception.InvalidBDMFormat(
                details=f"image {image.get('id')} has an unreadable block_device_mapping"
            ) from exc
    return [_normalize(item) for item in mappings
            if not strutils.bool_from_string(item.get("no_device") or False)]


def _strip_dev(name):
    return name[5:] if name and name.startswith("/dev/") else name


def root_image_bdm(image_ref) -> dict:
    """The image→local root disk of an image-backed boot."""
    bdm = _normalize({"source_type": "image", "destination_type": "local",
                      "boot_index": 0, "device_type": "disk",
                      "delete_on_termination": True})
    bdm["image_id"] = image_ref
    return bdm


def merge(image_ref, image_bdms, requested) -> list[dict]:
    """Image-defined mappings overridden by requested ones on the same device.

    A bootable image-defined mapping replaces the image→local root the client
    may have added; an image-backed boot without any root disk gets one.
    """
    if any(b["boot_index"] == 0 for b in image_bdms):
        requested = [b for b in requested
                     if not (b["boot_index"] == 0 and b["source_type"] == "image")]
    devices = {_strip_dev(b["device_name"]) for b in requested if b["device_name"]}
    merged = [b for b in image_bdms
              if not (b["device_name"] and _strip_dev(b["device_name"]) in devices)]
    merged += requested
    if image_ref and not any(b["boot_index"] == 0 for b in merged):
        merged.insert(0, root_image_bdm(image_ref))
    return merged


@dataclasses.dataclass
class BootCheck:
    """What :func:`validate` needs besides the BDMs."""

    context: object
    deps: object
    version: mv.Version
    image_ref: str | None
    image: dict | None
    flavor: object
    max_count: int
    availability_zone: str | None


@dataclasses.dataclass
class Validated:
    bdms: list
    multiattach: bool = False


def _check_boot_sequence(bdms):
    indexes = sorted(b["boot_index"] for b in bdms if b["boot_index"] >= 0)
    if not indexes or any(i != v for i, v in enumerate(indexes)):
        raise exception.InvalidBDMBootSequence()


def _check_volume_types(check, bdms) -> bool:
    """Rule 6: returns True when a type asks for multiattach."""
    types = None
    multiattach = False
    for bdm in bdms:
        if not bdm["volume_type"]:
            continue
        wanted = bdm["volume_type"]
        if types is None or not any(wanted in (t.get("id"), t.get("name")) for t in types):
            types = check.deps.volume_types.visible(check.context, wanted)
        match = next((t for t in types if wanted in (t.get("id"), t.get("name"))), None)
        if match is None:
            raise exception.InvalidBDMVolumeType(id_or_name=wanted)
        # Stored by name, whichever the user gave (Nova does the same).
        bdm["volume_type"] = match["name"]
        specs = match.get("extra_specs") or {}
        multiattach |= str(specs.get("multiattach", "")).lower() == "<is> true"
    return multiattach


def _check_image(check, bdm, cache):
    image_id = bdm["image_id"]
    if image_id == check.image_ref and check.image is not None:
        cache.setdefault(image_id, check.image)
    if image_id not in cache:
        try:
            cache[image_id] = check.deps.glance.get(check.context, image_id)
        except Exception as exc:  # noqa: BLE001 - Nova: any failure is "failed to get"
            raise exception.InvalidBDMImage(id=image_id) from exc
    if bdm["destination_type"] == "volume" and not bdm["volume_size"]:
        raise exception.InvalidBDM(
            "Images with destination_type 'volume' need to have a non-zero size specified")


def _check_volume(check, bdm) -> dict:
    """A source volume: it exists, and a root volume must be bootable."""
    volume_id = bdm["volume_id"]
    try:
        volume = ownership.check_volume(
            check.context, check.deps.cinder.get(check.context, volume_id))
    except exception.CinderConnectionFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - Nova: any failure is "failed to get"
        raise exception.InvalidBDMVolume(id=volume_id) from exc
    if bdm["boot_index"] == 0 and not strutils.bool_from_string(volume.get("bootable", True)):
        raise exception.InvalidBDMVolumeNotBootable(id=volume_id)
    bdm["volume_size"] = volume.get("size")
    return volume


def _check_attachable(check, volume) -> bool:
    """Multiattach needs 2.60; cross-AZ per [cinder] cross_az_attach."""
    multiattach = bool(volume.get("multiattach"))
    if multiattach and not check.version >= mv.V2_60_MULTIATTACH:
        raise exception.MultiattachNotSupportedOldMicroversion()
    check.deps.cinder.check_availability_zone(volume, check.availability_zone)
    return multiattach


def _check_snapshot(check, bdm):
    snapshot_id = bdm["snapshot_id"]
    try:
        snapshot = ownership.check_snapshot(
            check.context, check.deps.cinder.get_snapshot(check.context, snapshot_id))
    except exception.CinderConnectionFailed:
        raise
    except Exception as exc:  # noqa: BLE001
        raise exception.InvalidBDMSnapshot(id=snapshot_id) from exc
    bdm["volume_size"] = bdm["volume_size"] or snapshot.get("size")


def _check_local_disks(check, bdms):
    flavor = check.flavor
    local = [b for b in bdms if b["destination_type"] == "local"]
    blanks = [b for b in local if b["source_type"] == "blank"]
    swaps = [b for b in blanks if b["guest_format"] == "swap"]
    if len(swaps) > 1:
        raise exception.InvalidBDMFormat(details="More than one swap drive requested.")
    if swaps and (swaps[0]["volume_size"] or 0) > flavor.swap:
        raise exception.InvalidBDMSwapSize()
    ephemeral = sum(b["volume_size"] or flavor.ephemeral_gb
                    for b in blanks if b["guest_format"] != "swap")
    if ephemeral > flavor.ephemeral_gb:
        raise exception.InvalidBDMEphemeralSize()
    if len(local) > MAX_LOCAL_BLOCK_DEVICES:
        raise exception.InvalidBDMLocalsLimit()


def require_image_or_bdms(image_ref, bdms):
    """Rule 4: something must be bootable."""
    if not image_ref and not bdms:
        raise exception.Invalid("Missing imageRef attribute")


def validate(check: BootCheck, bdms: list[dict]) -> Validated:
    """Rules 5-8 of §4.2 on the merged list (mutates volume_size/volume_type)."""
    _check_boot_sequence(bdms)
    for bdm in bdms:
        if bdm["disk_bus"] and bdm["disk_bus"] not in DISK_BUSES:
            # NOTE: Nova's InvalidBDMDiskBus has a typo in its msg_fmt, so the
            # client sees the generic InvalidBDM text; we keep that text.
            raise exception.InvalidBDM()
    multiattach = _check_volume_types(check, bdms)
    images: dict[str, dict] = {}
    volumes: list = []
    for bdm in bdms:
        if bdm["image_id"] is not None and bdm["source_type"] == "image":
            _check_image(check, bdm, images)
        elif bdm["source_type"] == "volume":
            volumes.append(_check_volume(check, bdm))
        elif bdm["source_type"] == "snapshot":
            _check_snapshot(check, bdm)
        elif (bdm["source_type"] == "blank" and bdm["destination_type"] == "volume"
              and not bdm["volume_size"]):
            raise exception.InvalidBDM(
                "Blank volumes (source: 'blank', dest: 'volume') need to have non-zero size")
    if check.max_count > 1 and any(b["source_type"] == "volume" for b in bdms):
        raise exception.Invalid("Cannot attach one or more volumes to multiple instances")
    for volume in volumes:
        multiattach |= _check_attachable(check, volume)
    _check_local_disks(check, bdms)
    return Validated(bdms=bdms, multiattach=multiattach)
