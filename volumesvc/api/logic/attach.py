"""Synchronous checks of volume attach (doc/source/contributor/contract.rst §2, §3.2-3.5).

What stays in the API at every microversion, in Nova's order, as plain
functions over the instance, the Cinder volume dict and BDM rows, so they
are unit tested without an app. Everything that needs the compute host
(device reservation, capabilities, Cinder ``attachment_create``) runs in the
conductor's attach task; from 2.101 its failures are not HTTP errors.
"""

import re

from volumesvc import exception
from volumesvc.api import microversions as mv
from volumesvc.api.logic import states
from volumesvc.objects import compute_host
from volumesvc.states import vm_states
from volumesvc.volume import cinder as cinder_versions

_DEVICE = re.compile(r"(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$")


def gate_vm_states(version, gate: states.Gate) -> frozenset | None:
    """The vm_states ``gate`` allows at ``version``: shelved ones only from 2.20.

    A gate that checks no vm_state (``states.ANY``) stays unchecked.
    """
    if gate.vm_states is states.ANY or version >= mv.V2_20_SHELVED_VOLUMES:
        return gate.vm_states
    return gate.vm_states - states.SHELVED_STATES


def check_shelved(version, instance, action):
    """409 for a shelved(-offloaded) server below 2.20 (detach checks it early)."""
    if version < mv.V2_20_SHELVED_VOLUMES and instance.vm_state in states.SHELVED_STATES:
        raise states.invalid_state(instance, action, "vm_state")


def match_device(device) -> bool:
    """Nova's block_device.match_device: is ``device`` a usable name hint?"""
    return bool(_DEVICE.match(device))


def attached_servers(volume_bdms) -> list[str]:
    """Server uuids that hold a live BDM of the volume, in BDM order, unique."""
    seen = []
    for bdm in volume_bdms:
        if bdm.instance_uuid not in seen:
            seen.append(bdm.instance_uuid)
    return seen


def check_attach(ctx, *, version, instance, volume, volume_bdms, device=None, tag=None):
    """Raise the first refusal of an attach request, or return None.

    ``volume`` is Cinder's dict, ``volume_bdms`` the live BDMs of that volume
    (any server). Order: lock and state (409), device name (400), volume
    attached elsewhere and not multiattach (400), already attached to this
    server (400), multiattach below 2.60 (400), shelved-offloaded limits (400).
    """
    states.check_gate(ctx, instance, states.ATTACH,
                      vm_states=gate_vm_states(version, states.ATTACH))
    if device and not match_device(device):
        raise exception.InvalidDevicePath(path=device)
    servers = attached_servers(volume_bdms)
    multiattach = bool(volume.get("multiattach"))
    if servers and not multiattach:
        raise exception.VolumeAlreadyAttached(volume_id=volume["id"],
                                              instance_uuids=", ".join(servers))
    if instance.uuid in servers:
        raise exception.VolumeAlreadyAttached(volume_id=volume["id"],
                                              instance_uuids=instance.uuid)
    # NOTE: Nova finds this one in the conductor; done here too so that it is
    # a 400 at every microversion (at 2.101 the conductor's is only logged).
    if multiattach and version < mv.V2_60_MULTIATTACH:
        raise exception.MultiattachNotSupportedOldMicroversion()
    if instance.vm_state == vm_states.SHELVED_OFFLOADED:
        if tag:
            raise exception.VolumeTaggedAttachToShelvedNotSupported()
        if multiattach:
            raise exception.MultiattachToShelvedNotSupported()


def same_attachment(instance, volume_bdms, *, device=None, tag=None,
                    delete_on_termination=None, read_only=None):
    """The BDM that already attaches this volume to ``instance`` as asked, else None (2.107).

    A retried attach (a client that timed out and asks again) names the
    same volume, and the same device hint, tag and flag if it gave any: a
    ``device`` or ``delete_on_termination`` that is given must equal the
    attachment's, and the ``tag`` must be the attachment's (none for none).
    The device may also be the one the attach asked for
    (``requested_device``): the compute names the disk itself, so a retry
    of a request with a hint repeats a name the attachment need not have.
    Anything else is a different request and keeps Nova's 400.
    """
    for bdm in volume_bdms:
        if bdm.instance_uuid != instance.uuid:
            continue
        if device is not None and device == bdm.requested_device:
            device = None  # the hint the attach was asked with: nothing else to compare
        same = _same(dict(device=bdm.device_name, tag=bdm.tag,
                          delete_on_termination=bool(bdm.delete_on_termination),
                          read_only=bool(bdm.read_only)),
                     device=device, tag=tag, delete_on_termination=delete_on_termination,
                     read_only=read_only)
        return bdm if same else None
    return None


def same_request(pending: dict, *, device=None, tag=None, delete_on_termination=None,
                 read_only=None) -> bool:
    """Does this attach repeat ``pending``, an accepted attach not done yet? (2.107)

    ``pending``: that request's cast keyword arguments. The rule of
    ``same_attachment``, against what that request asked for: identical
    attaches sent at once are one attach and its retries, whichever of
    them was recorded first.
    """
    return _same(dict(device=pending.get("device"), tag=pending.get("tag"),
                      delete_on_termination=bool(pending.get("delete_on_termination")),
                      read_only=bool(pending.get("read_only"))),
                 device=device, tag=tag, delete_on_termination=delete_on_termination,
                 read_only=read_only)


def _same(have: dict, *, device, tag, delete_on_termination, read_only) -> bool:
    """``have`` (device, tag, delete_on_termination, read_only) is what was asked."""
    if device is not None and device != have["device"]:
        return False
    if tag != have["tag"]:
        return False
    if delete_on_termination is not None and delete_on_termination != have[
            "delete_on_termination"]:
        return False
    return read_only is None or read_only == have["read_only"]


def cinder_read_only(volume) -> bool:
    """Cinder's read-only flag (``os-update_readonly_flag``), shown in ``metadata``."""
    return str((volume.get("metadata") or {}).get("readonly", "")).lower() == "true"


def check_read_only(ctx, cinder, volume, read_only):
    """Refuse a ``read_only`` (2.108) that Cinder or the compute cannot honour.

    ``false`` for a volume with Cinder's read-only flag is a 400: Cinder
    would make the attachment read-only anyway, which is not what was
    asked. ``true`` needs Cinder's attachment ``mode`` (volume API 3.54),
    409 otherwise.
    """
    if read_only is None:
        return
    if not read_only:
        if cinder_read_only(volume):
            raise exception.ReadOnlyVolumeAttachedReadWrite(volume_id=volume["id"])
        return
    highest = cinder.max_microversion(ctx)
    if mv.parse(highest) < mv.parse(cinder_versions.MV_ATTACHMENT_MODE):
        raise exception.ReadOnlyAttachNotSupportedByCinder(
            version=highest, minimum=cinder_versions.MV_ATTACHMENT_MODE)


def check_host_capabilities(conf, db, ctx, instance, volume):
    """409 up front for a multiattach volume on a host that cannot share disks.

    Nova only finds out on the compute (400 below 2.101, an Error event
    from 2.101); the capabilities every compute publishes with its
    heartbeat let the API refuse before anything is reserved, so the
    volume stays ``available``. A host whose record does not mention the
    capability (an older compute) is left to the compute's own check.
    """
    if not volume.get("multiattach") or not instance.host:
        return
    host = compute_host.get(conf, db, ctx, instance.host)
    if host.supports("supports_multiattach") is False:
        raise exception.MultiattachNotSupportedByHost(
            volume_id=volume["id"], instance_uuid=instance.uuid, host=instance.host)


def check_root(bdm):
    """A boot volume stays: 400 ``Cannot detach a root device volume``."""
    if bdm.boot_index == 0:
        raise exception.CannotDetachRootVolume()


def check_host_up(conf, db, ctx, instance):
    """409 when the compute service of the instance's host is not up.

    A shelved-offloaded server has no host; nothing to check then.
    """
    if not instance.host:
        return
    if not compute_host.get(conf, db, ctx, instance.host).up:
        raise exception.ComputeHostDown(host=instance.host, instance_uuid=instance.uuid)


def attachment_id_for(bdm, volume, instance_uuid):
    """The Cinder attachment to delete on detach.

    The BDM's own ``attachment_id`` when it has one; otherwise the entry of
    the volume's Cinder attachments that belongs to this server (or None).
    """
    if bdm.attachment_id:
        return bdm.attachment_id
    for entry in volume.get("attachments") or []:
        if entry.get("server_id") == instance_uuid:
            return entry.get("attachment_id")
    return None


# Fields a 2.85 update may echo, and where their current value lives.
_ECHOED = (
    ("id", lambda bdm, instance: bdm.volume_id),
    ("serverId", lambda bdm, instance: instance.uuid),
    ("device", lambda bdm, instance: bdm.device_name),
    ("tag", lambda bdm, instance: bdm.tag),
)


def check_not_mutated(attachment: dict, bdm, instance):
    """400 ``The <f> property is not mutable`` when an echoed field changes."""
    for key, current in _ECHOED:
        if key in attachment and attachment[key] != current(bdm, instance):
            raise exception.AttachmentPropertyNotMutable(property=key)


def check_swap(ctx, instance, old_volume, new_volume, rw_attachments: int):
    """The swap refusals, in Nova's order.

    Lock/state (409); a multiattach volume with more than one read/write
    attachment (400); an old volume Cinder is not migrating (409: as Nova
    since its bug 2112187, a swap is only Cinder's call-back during a retype
    or migration, never a way to put any volume under a server); a new
    volume that is attached or not ``available``/``reserved`` (400); a new
    volume smaller than the old one (400).
    """
    states.check_gate(ctx, instance, states.SWAP)
    if old_volume.get("multiattach") and rw_attachments > 1:
        raise exception.MultiattachSwapVolumeNotSupported()
    if not old_volume.get("migration_status"):
        raise exception.SwapVolumeNotMigrating(volume_id=old_volume["id"])
    if new_volume.get("attach_status") == "attached" or \
            new_volume.get("status") not in ("available", "reserved"):
        raise exception.SwapVolumeInvalid(
            reason="New volume must be detached in order to swap.")
    if int(new_volume.get("size") or 0) < int(old_volume.get("size") or 0):
        raise exception.SwapVolumeInvalid(
            reason="New volume must be the same size or larger.")
