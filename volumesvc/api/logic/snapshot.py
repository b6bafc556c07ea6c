"""createImage of a volume-backed server (doc/source/contributor/contract.rst §6, spec 5).

The image holds no data: it is a zero-byte Glance image whose properties
describe how to rebuild the server's disks, one Cinder snapshot per volume.
Booting from it later creates volumes from those snapshots. Steps, as in
Nova's ``snapshot_volume_backed``:

1. split the BDMs: local ones (swap, ephemeral) are copied as they are and
   come first; volume ones get a snapshot each;
2. check the Cinder snapshot quota for all of them up front (403), so we do
   not stop half way through a list of volumes;
3. record the ``createImage`` action, snapshot every volume (``force``: they
   are in use) under the ``api_snapshot_instance`` event;
4. create the image with ``root_device_name``, ``bdm_v2`` and the JSON
   ``block_device_mapping``.

Unlike Nova, each snapshot is made with the request's marks and the image
with an id derived from the request (``volume/snapshots.py``), and the
event is ended by a compare and swap: an API process killed between the
snapshots and the image leaves them to the conductors
(``conductor/image_requests.py``) instead of for ever.

NOTE: Nova quiesces an active guest around step 3 (best effort unless the
image says ``os_require_quiesce``). volumesvc has no quiesce RPC yet, so the
snapshots are crash-consistent. TODO(quiesce RPC lands): quiesce/unquiesce.

Spec 5: each volume entry carries ``volume_type`` = the *source volume's
type name* (Nova writes null and looks the type up again at boot).
"""

import traceback

from oslo_log import log as logging

from volumesvc import exception
from volumesvc.image import glance
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance_action as action_obj
from volumesvc.volume import snapshots as volume_snapshots

LOG = logging.getLogger(__name__)

ACTION = "createImage"
EVENT = volume_snapshots.CREATE_IMAGE_EVENT

# Every new-format BDM key an image mapping carries (Nova's bdm_new_fields
# minus connection_info), in a stable order.
IMAGE_MAPPING_KEYS = (
    "source_type", "destination_type", "guest_format", "device_type", "disk_bus",
    "boot_index", "device_name", "delete_on_termination", "snapshot_id", "volume_id",
    "volume_size", "image_id", "no_device", "tag", "volume_type", "encrypted",
    "encryption_secret_uuid", "encryption_format", "encryption_options",
)
# What a snapshot mapping copies from the volume BDM it replaces.
_COPIED_FROM_VOLUME = ("disk_bus", "device_type", "boot_index", "delete_on_termination",
                       "volume_size", "device_name")


def image_mapping(bdm) -> dict:
    """A local BDM as an image mapping: every key, unknown ones null."""
    return {key: getattr(bdm, key, None) for key in IMAGE_MAPPING_KEYS}


def snapshot_mapping(bdm, snapshot_id, volume_type) -> dict:
    """The image mapping that recreates ``bdm``'s volume from ``snapshot_id``."""
    mapping = dict.fromkeys(IMAGE_MAPPING_KEYS)
    mapping.update(source_type="snapshot", destination_type="volume",
                   snapshot_id=snapshot_id, volume_type=volume_type)
    for key in _COPIED_FROM_VOLUME:
        mapping[key] = getattr(bdm, key)
    return mapping


def check_snapshot_quota(cinder, ctx, count: int) -> None:
    """403 when ``count`` more snapshots would exceed the project's Cinder quota."""
    limits = cinder.get_absolute_limits(ctx)
    used = limits.get("totalSnapshotsUsed", 0)
    maximum = limits.get("maxTotalSnapshots", -1)
    # NOTE: -1 is Cinder's "unlimited".
    if maximum is not None and maximum > -1 and used + count > maximum:
        LOG.debug("Snapshot quota: %d used + %d requested > %d", used, count, maximum)
        raise exception.OverQuota(overs="snapshots")


def _split(bdms):
    local: list = []
    volumes: list = []
    for bdm in bdms:
        if bdm.no_device:
            continue
        (volumes if bdm.is_volume else local).append(bdm)
    return local, volumes


def is_volume_backed(instance, bdms) -> bool:
    """The root disk is a volume (no image, or a boot_index 0 volume BDM)."""
    if any(b.is_volume and b.boot_index == 0 for b in bdms):
        return True
    return not instance.image_ref


def check_metadata(metadata) -> None:
    """400 for a key Glance keeps as an image attribute (``visibility``, ``owner``...).

    Glance would refuse the image, but only after every volume has been
    snapshotted; checked first, those snapshots are never made.
    """
    reserved = sorted(set(metadata or {}) & glance.CORE_ATTRIBUTES)
    if reserved:
        raise exception.Invalid(reason=f"Image metadata may not set the image attribute(s) "
                                f"{', '.join(reserved)}.")


def _snapshot_volumes(ctx, cinder, volume_bdms, name, made, marks):
    """Snapshot each volume with ``marks``; every snapshot id is appended to ``made`` at once."""
    mappings = []
    for bdm in volume_bdms:
        volume = cinder.get(ctx, bdm.volume_id)
        snapshot = cinder.create_snapshot_force(
            ctx, volume["id"], name=f"snapshot for {name}",
            description=volume.get("description"), metadata=marks)
        made.append(snapshot["id"])
        # Spec 5: the source volume's type name, falling back to what the
        # BDM recorded at boot when Cinder does not say.
        volume_type = volume.get("volume_type") or bdm.volume_type
        mappings.append(snapshot_mapping(bdm, snapshot["id"], volume_type))
    return mappings


def snapshot_volume_backed(ctx, *, db, cinder, glance, instance, name, metadata=None,
                           bdms=None, undo_timeout=0.0, grace=None) -> dict:
    """Snapshot every volume of ``instance`` and return the new Glance image.

    The instance's state was checked by the caller. Raises Invalid (400)
    for metadata Glance would refuse and OverQuota (403) for snapshots over
    the quota, both before anything is created; when a later step fails,
    the snapshots already made are deleted again. They are still
    ``creating`` then, which Cinder refuses to delete: the undo waits up to
    ``undo_timeout`` seconds (``[cinder] snapshot_undo_timeout``) and
    leaves what is still not deletable to the conductors' cleanup
    (``volume/snapshots.py``). A snapshot left behind keeps its volume from
    being deleted.

    When the conductors ended the request as abandoned meanwhile (it ran
    longer than ``grace``, ``[conductor] create_image_grace``), the image
    is deleted again and CreateImageAbandoned (503) raised: they are
    deleting its snapshots.
    """
    check_metadata(metadata)
    if bdms is None:
        bdms = bdm_obj.list_by_instance(db, ctx, instance.uuid)
    local, volume_bdms = _split(bdms)
    if volume_bdms:
        check_snapshot_quota(cinder, ctx, len(volume_bdms))

    action_obj.action_start(db, ctx, instance.uuid, ACTION, ctx.request_id, ctx.user_id,
                            ctx.project_id)
    action_obj.event_start(db, ctx, instance.uuid, ctx.request_id, EVENT)
    made: list = []
    marks = volume_snapshots.image_request_marks(instance.uuid, ctx.request_id)
    try:
        mappings = [image_mapping(bdm) for bdm in local]
        mappings.extend(_snapshot_volumes(ctx, cinder, volume_bdms, name, made, marks))
        properties = dict(metadata or {})
        properties.update(instance_uuid=instance.uuid, user_id=ctx.user_id,
                          image_type="snapshot")
        if instance.root_device_name:
            properties["root_device_name"] = instance.root_device_name
        if mappings:
            properties["bdm_v2"] = True
            properties["block_device_mapping"] = mappings
        image = glance.create(ctx, name=name, owner=instance.project_id,
                              properties=properties, disk_format="raw",
                              container_format="bare", size=0,
                              image_id=volume_snapshots.image_id_for(instance.uuid,
                                                                     ctx.request_id))
    except Exception:
        volume_snapshots.delete_when_deletable(cinder, ctx, made, timeout=undo_timeout)
        action_obj.event_finish_if_running(db, ctx, instance.uuid, ctx.request_id, EVENT,
                                           result="Error", traceback=traceback.format_exc())
        raise
    if not action_obj.event_finish_if_running(db, ctx, instance.uuid, ctx.request_id, EVENT):
        LOG.warning("createImage %s of server %s was ended as abandoned while it ran; "
                    "deleting its image %s", ctx.request_id, instance.uuid, image["id"])
        _delete_image_quietly(ctx, glance, image["id"])
        raise exception.CreateImageAbandoned(grace=grace)
    return image


def _delete_image_quietly(ctx, glance, image_id) -> None:
    try:
        glance.delete(ctx, image_id)
    except exception.ImageNotFound:
        pass
    except Exception:  # noqa: BLE001 - the abandonment is what the caller reports
        LOG.exception("Could not delete image %s of an abandoned createImage", image_id)
