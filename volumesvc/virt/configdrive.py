"""Config drives: what a guest reads from its ``config-2`` disk, and the ISO that holds it.

A guest without a metadata service (volumesvc runs none) learns who it is
from a small read-only disk, as with Nova: an ISO 9660 image labelled
``config-2`` whose ``openstack/<version>/`` directories hold
``meta_data.json``, the server's ``user_data`` (decoded, when it has one),
``vendor_data.json``, ``vendor_data2.json`` and ``network_data.json``. Each
dated version holds the keys that version of the layout defines, ``latest``
holds them all; cloud-init and the project's own guest read ``latest``.

This module only knows the layout and the image format. Which servers get
a drive (:func:`required`), and where it goes in a domain, the compute and
the virt driver decide. ISO writing is pycdlib's: pure Python, so the
functional tier's drives are real ISO images that tests read back.
"""

import base64
import io
import json
import os

import pycdlib

LABEL = "config-2"
PUBLISHER = "volumesvc"

# The dated versions of the openstack/ tree, oldest first: the keys a
# guest finds depend on the version it reads (see _meta_data).
FOLSOM = "2012-08-10"
GRIZZLY = "2013-04-04"
HAVANA = "2013-10-17"
LIBERTY = "2015-10-15"
NEWTON_ONE = "2016-06-30"
NEWTON_TWO = "2016-10-06"
OCATA = "2017-02-22"
ROCKY = "2018-08-27"
VICTORIA = "2020-10-14"
EPOXY = "2025-04-04"
VERSIONS = (FOLSOM, GRIZZLY, HAVANA, LIBERTY, NEWTON_ONE, NEWTON_TWO, OCATA, ROCKY,
            VICTORIA, EPOXY)
LATEST = "latest"

# An image may insist on a drive (Nova's ``img_config_drive`` property).
IMAGE_PROPERTY = "img_config_drive"
MANDATORY = "mandatory"


def required(force: bool, instance: dict) -> bool:
    """Whether ``instance`` gets a config drive.

    ``force`` is ``[DEFAULT] force_config_drive``. The instance asked for
    one at boot (``config_drive`` is ``"True"``), or its image requires it.
    """
    properties = instance.get("image_properties") or {}
    return bool(force or instance.get("config_drive")
                or properties.get(IMAGE_PROPERTY) == MANDATORY)


def qualified(hostname: str | None, domain: str | None) -> str | None:
    """``hostname.domain`` as the guest's hostname (Nova's ``dhcp_domain``); as is without one."""
    if not hostname or not domain:
        return hostname
    return f"{hostname}.{domain}"


def _at_least(version: str, first: str) -> bool:
    return version == LATEST or version >= first


def _key_type(public_key: str) -> str:
    return "x509" if public_key.lstrip().startswith("-----BEGIN CERTIFICATE") else "ssh"


def _meta_data(instance: dict, devices: list, version: str) -> dict:
    """``meta_data.json`` of one version directory."""
    data: dict = {"uuid": instance["uuid"]}
    if instance.get("metadata"):
        data["meta"] = dict(instance["metadata"])
    key_name, key_data = instance.get("key_name"), instance.get("key_data")
    if key_name and key_data:
        data["public_keys"] = {key_name: key_data}
        data["keys"] = [{"name": key_name, "type": _key_type(key_data), "data": key_data}]
    data["hostname"] = instance.get("hostname")
    data["name"] = instance.get("display_name")
    data["launch_index"] = instance.get("launch_index") or 0
    data["availability_zone"] = instance.get("availability_zone")
    if _at_least(version, GRIZZLY):
        data["random_seed"] = base64.b64encode(os.urandom(512)).decode()
    if _at_least(version, LIBERTY):
        data["project_id"] = instance.get("project_id")
    if _at_least(version, NEWTON_ONE):
        data["devices"] = list(devices)
    if _at_least(version, VICTORIA):
        data["dedicated_cpus"] = []
    return data


def _json(value) -> bytes:
    return json.dumps(value).encode()


def files(instance: dict, devices: list) -> dict[str, bytes]:
    """Every file of the drive: ``{"openstack/latest/meta_data.json": b"...", ...}``.

    ``instance`` carries the server's record fields (uuid, display_name,
    hostname, launch_index, availability_zone, project_id, metadata,
    key_name, key_data, user_data); ``devices`` are the tagged disks as
    :func:`disk_device` describes them.
    """
    user_data = instance.get("user_data")
    raw_user_data = base64.b64decode(user_data) if user_data is not None else None
    out = {}
    for version in VERSIONS + (LATEST,):
        prefix = f"openstack/{version}/"
        out[prefix + "meta_data.json"] = _json(_meta_data(instance, devices, version))
        if raw_user_data is not None:
            out[prefix + "user_data"] = raw_user_data
        if _at_least(version, HAVANA):
            out[prefix + "vendor_data.json"] = _json({})
        if _at_least(version, LIBERTY):
            out[prefix + "network_data.json"] = _json(
                {"links": [], "networks": [], "services": []})
        if _at_least(version, NEWTON_TWO):
            out[prefix + "vendor_data2.json"] = _json({})
    return out


def disk_device(*, bus: str, serial: str | None, address: str | None, tag: str) -> dict:
    """One entry of ``devices``: a tagged disk as the guest can find it.

    ``bus`` is the disk's bus (``scsi``, ``ide``, ...), ``address`` its
    drive address on that bus (``"0:0:0:<unit>"`` on the virtio-scsi
    controller: controller, bus, target, unit), ``serial`` what the guest
    reads as the disk's serial (a volume's id).
    """
    device = {"type": "disk", "bus": bus, "address": address or "none", "tags": [tag]}
    if serial:
        device["serial"] = serial
    return device


# --- the ISO 9660 image -----------------------------------------------------------------

def _iso_name(name: str, directory: bool) -> str:
    """An ISO 9660 level 3 name (d-characters); Rock Ridge and Joliet keep the real one."""
    cleaned = "".join(c if c.isalnum() else "_" for c in name.upper())
    if directory:
        return cleaned[:31]
    stem, _, ext = name.upper().rpartition(".")
    if not stem:
        return cleaned[:30] + ";1"
    stem = "".join(c if c.isalnum() else "_" for c in stem)
    ext = "".join(c if c.isalnum() else "_" for c in ext)
    return f"{stem[:29 - len(ext)]}.{ext};1"


def write_iso(content: dict[str, bytes], path: str) -> None:
    """Write ``content`` (relative path → bytes) as an ISO labelled ``config-2`` at ``path``.

    ISO 9660 with Rock Ridge and Joliet, as Nova's ``genisoimage -J -r``
    makes it: a Linux guest mounting it sees the real, lower-case names.
    Written to a temporary file and renamed, so a drive being replaced is
    never seen half-written.
    """
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, joliet=3, rock_ridge="1.09", vol_ident=LABEL,
            pub_ident_str=PUBLISHER)
    made = {""}
    try:
        for rel in sorted(content):
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if directory in made:
                    continue
                iso.add_directory(
                    "/" + "/".join(_iso_name(p, True) for p in parts[:depth]),
                    rr_name=parts[depth - 1], joliet_path="/" + directory)
                made.add(directory)
            data = content[rel]
            iso_path = "/" + "/".join(
                [_iso_name(p, True) for p in parts[:-1]] + [_iso_name(parts[-1], False)])
            iso.add_fp(io.BytesIO(data), len(data), iso_path, rr_name=parts[-1],
                       joliet_path="/" + rel)
        partial = path + ".partial"
        iso.write(partial)
    finally:
        iso.close()
    os.replace(partial, path)


def read_iso(path: str) -> tuple[str, dict[str, bytes]]:
    """(volume label, relative path → bytes) of an ISO this module wrote, by Rock Ridge names."""
    iso = pycdlib.PyCdlib()
    iso.open(path)
    try:
        label = iso.pvd.volume_identifier.decode().rstrip(" ")
        found = {}
        for dirname, _dirs, names in iso.walk(rr_path="/"):
            for name in names:
                rr_path = f"{dirname.rstrip('/')}/{name}"
                out = io.BytesIO()
                iso.get_file_from_iso_fp(out, rr_path=rr_path)
                found[rr_path.lstrip("/")] = out.getvalue()
        return label, found
    finally:
        iso.close()
