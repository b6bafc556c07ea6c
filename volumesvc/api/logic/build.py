"""Creating the instances of one POST /servers: rows, attachments, the cast.

Everything here runs after ``logic/bdm.py`` accepted the request. Order:

1. reserve every source volume in Cinder (attachment without connector, so
   the volume goes ``reserved`` and nobody else takes it);
2. per instance (min..max_count, we always create max_count): the instance
   row (building/scheduling), its own BDM rows, the ``create`` action;
3. one ``conductor.build_instances`` cast with the request spec.

If anything fails before the cast went out, the attachments made in step 1
are deleted and the rows soft-deleted again: a refused boot leaks nothing.
"""

import dataclasses
import logging
import random
import re
import string
import uuid as uuidlib

from volumesvc import quota
from volumesvc.api.logic import undo
from volumesvc.db import api as db_api
from volumesvc.objects import block_device as bdm_obj
from volumesvc.objects import instance as instance_obj
from volumesvc.objects import instance_action
from volumesvc.states import task_states, vm_states
from volumesvc.volume import reserve

LOG = logging.getLogger(__name__)

# Image keys the conductor may need (the rest of Glance's answer stays here).
_IMAGE_KEYS = ("id", "name", "status", "size", "min_disk", "min_ram", "disk_format",
               "container_format", "properties")
_RESERVATION_CHARS = string.ascii_lowercase + string.digits


@dataclasses.dataclass
class BuildRequest:
    """The accepted request: what each instance row and the spec are made of."""

    name: str
    flavor: object
    bdms: list
    max_count: int = 1
    min_count: int = 1
    description: str | None = None
    image_ref: str | None = None
    image: dict | None = None
    availability_zone: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)
    key_name: str | None = None
    key_data: str | None = None
    user_data: str | None = None
    config_drive: str | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    tags: list = dataclasses.field(default_factory=list)
    hostname: str | None = None
    multiattach: bool = False
    requested_host: str | None = None


def reservation_id() -> str:
    return "r-" + "".join(random.choices(_RESERVATION_CHARS, k=8))


def sanitize_hostname(name: str) -> str:
    """Nova's sanitize_hostname: lower case, [a-z0-9-.], at most 63 chars."""
    hostname = re.sub(r"[ _]", "-", name.lower())
    hostname = re.sub(r"[^\w.-]+", "", hostname, flags=re.ASCII)
    hostname = hostname.strip(".-")[:63]
    return hostname.rstrip(".-")


def _names(request, uuid, index):
    """(display_name, hostname) of instance ``index`` (Nova's -N suffix when >1)."""
    name, hostname = request.name, request.hostname
    if not hostname:
        hostname = sanitize_hostname(name) or f"Server-{uuid}"
        if request.max_count > 1:
            hostname = f"{hostname}-{index + 1}"
    if request.max_count > 1:
        name = f"{name}-{index + 1}"
    return name, hostname


def request_spec(request) -> dict:
    """The JSON-able spec ``build_instances`` gets (see conductor rpcapi)."""
    image = None
    if request.image is not None:
        image = {key: request.image[key] for key in _IMAGE_KEYS if key in request.image}
    return {"flavor": request.flavor.instance_copy(), "image": image,
            "availability_zone": request.availability_zone,
            "needs": ["supports_multiattach"] if request.multiattach else [],
            "requested_host": request.requested_host}


# Image keys kept with the server besides the image's own properties, and
# properties never kept (image signing data is no property of the server).
_INHERITED_IMAGE_KEYS = ("min_ram", "min_disk", "disk_format", "container_format")
_SKIPPED_IMAGE_PROPERTIES = frozenset({
    "cache_in_nova", "bittorrent", "img_signature", "img_signature_hash_method",
    "img_signature_key_type", "img_signature_certificate_uuid"})
_PROPERTY_KEY = re.compile(r"^[a-zA-Z0-9_:. ]{1,255}$")


def image_properties(request) -> dict | None:
    """What an image-backed server shows as its image's ``properties`` from 2.98.

    Strings of at most 255 characters, as Nova keeps them in the instance's
    system metadata: the image's properties plus its minimum RAM and disk
    (the disk at least the flavor's root disk) and formats. None for a
    server booted from a volume.
    """
    image = request.image
    if not request.image_ref or not image:
        return None
    found = {key: value for key, value in (image.get("properties") or {}).items()
             if key not in _SKIPPED_IMAGE_PROPERTIES}
    for key in _INHERITED_IMAGE_KEYS:
        if image.get(key) is not None:
            found[key] = image[key]
    found["min_disk"] = max(int(found.get("min_disk") or 0), request.flavor.root_gb or 0)
    found["base_image_ref"] = request.image_ref
    return {key: str(value)[:255] for key, value in found.items()
            if value is not None and _PROPERTY_KEY.match(key)}


def _reserve_volumes(ctx, deps, bdms, instance_uuid) -> dict:
    """volume_id → attachment_id for every source volume; undone on failure.

    A multiattach volume that another server is attaching right now is
    waited for (bounded, see ``volume/reserve.py``) rather than refused.
    """
    made = {}
    cinder = deps.cinder
    try:
        for bdm in bdms:
            if bdm["source_type"] == "volume":
                attachment = reserve.attachment_create(deps.conf, cinder, ctx,
                                                       bdm["volume_id"], instance_uuid)
                made[bdm["volume_id"]] = attachment["id"]
    except Exception:
        _delete_attachments(ctx, cinder, made.values())
        raise
    return made


def _delete_attachments(ctx, cinder, attachment_ids):
    undo.each(lambda attachment_id: cinder.attachment_delete(ctx, attachment_id),
              attachment_ids, "attachment")


def _instance_values(ctx, request, uuid, index, resv_id) -> dict:
    name, hostname = _names(request, uuid, index)
    return {
        "uuid": uuid, "project_id": ctx.project_id, "user_id": ctx.user_id,
        "display_name": name, "display_description": request.description,
        "hostname": hostname, "availability_zone": request.availability_zone,
        "vm_state": vm_states.BUILDING, "task_state": task_states.SCHEDULING, "power_state": 0,
        "flavor_id": request.flavor.id, "flavor": request.flavor.instance_copy(),
        "image_ref": request.image_ref or None, "image_properties": image_properties(request),
        "key_name": request.key_name, "key_data": request.key_data,
        "metadata": dict(request.metadata), "config_drive": request.config_drive,
        "reservation_id": resv_id, "launch_index": index,
        "access_ip_v4": request.access_ip_v4, "access_ip_v6": request.access_ip_v6,
        "user_data": request.user_data, "tags": list(request.tags), "progress": 0,
    }


def _bdm_values(template, instance_uuid, attachments) -> dict:
    values = dict(template, instance_uuid=instance_uuid)
    if template["source_type"] == "volume":
        values["attachment_id"] = attachments[template["volume_id"]]
    return values


# MariaDB: the quota count reads the project's instance rows in share mode
# while conductors update some of them (task_state, host), and InnoDB may
# pick either transaction below as a deadlock's victim; run again, the
# client sees a 202, not a 500. ``keystone`` (unified limits) is read once
# by the caller: a retry repeats the transaction, not the call to Keystone.
@db_api.retry_on_deadlock
def _check_quota(ctx, deps, request, count, keystone) -> None:
    with deps.db.reader(ctx) as session:
        quota.allowed_instances(session, deps.conf, ctx.project_id, ctx.user_id,
                                request.flavor, request.min_count, count,
                                keystone=keystone)


@db_api.retry_on_deadlock
def _create_rows(ctx, deps, request, uuids, attachments, resv_id, keystone) -> list:
    """The instance, BDM and action rows, in one transaction that holds the quota lock.

    The instances quota (and cores, ram) is counted after the project's lock
    row is taken, so concurrent boots of one project queue here and each
    counts the rows the previous one committed (volumesvc/quota.py). As
    in Nova, ``max_count`` is lowered to what fits; below ``min_count`` the
    boot is refused with 403 and nothing is written.
    """
    quota.ensure_lock_row(deps.db, ctx, ctx.project_id)
    created = []
    with deps.db.writer(ctx) as session:
        quota.lock_project(session, ctx.project_id)
        count = quota.allowed_instances(session, deps.conf, ctx.project_id, ctx.user_id,
                                        request.flavor, request.min_count, len(uuids),
                                        keystone=keystone)
        for index, uuid in enumerate(uuids[:count]):
            instance = instance_obj.create(
                deps.db, ctx, _instance_values(ctx, request, uuid, index, resv_id),
                name_template=deps.conf.instance_name_template)
            created.append(instance)
            for template in request.bdms:
                bdm_obj.create(deps.db, ctx, _bdm_values(template, uuid, attachments))
            instance_action.action_start(deps.db, ctx, uuid, "create", ctx.request_id,
                                         ctx.user_id, ctx.project_id)
    return created


def create_instances(ctx, deps, request: BuildRequest):
    """Create ``max_count`` instances and cast their build; returns (instances, resv id)."""
    uuids = [str(uuidlib.uuid4()) for _ in range(request.max_count)]
    resv_id = reservation_id()
    # A boot already over quota is refused before Cinder is asked for anything;
    # the check that counts is the one under the lock in _create_rows.
    keystone = quota.keystone_limits(deps.conf, ctx.project_id)
    _check_quota(ctx, deps, request, len(uuids), keystone)
    # NOTE: bdm.py refuses source volumes with max_count > 1, so the
    # reservations all belong to the first (only) instance.
    attachments = _reserve_volumes(ctx, deps, request.bdms, uuids[0])
    created: list = []
    try:
        created = _create_rows(ctx, deps, request, uuids, attachments, resv_id, keystone)
        deps.conductor.build_instances(ctx, instance_uuids=[i.uuid for i in created],
                                       request_spec=request_spec(request))
    except Exception:
        _delete_attachments(ctx, deps.cinder, attachments.values())
        for instance in created:
            try:
                instance_obj.destroy(deps.db, ctx, instance.uuid)
            except Exception:  # noqa: BLE001
                LOG.exception("Could not remove instance %s after a failed boot",
                              instance.uuid)
        raise
    return created, resv_id
