"""FakeCinder: an in-memory stand-in for ``CinderAPI`` in functional tests.

Why: functional tests run the real API, conductor and compute but no Cinder.
This double has the same public methods as ``volumesvc.volume.cinder.CinderAPI``
and walks volumes through the statuses the real Cinder 29 uses, including its
refusals, so the orchestration code is tested against Cinder's rules rather
than against a yes-machine:

    available → reserved → attaching → in-use → detaching → available

* attachment_create refuses unless the volume is ``available`` or ``in-use``
  (so a second reservation while ``reserved`` fails, as in Cinder) and refuses
  ``in-use`` for a volume that is not multiattach;
* begin_detaching needs ``in-use``; roll_detaching goes back to ``in-use``;
* deleting the last attachment makes the volume ``available`` again;
* with ``hold_extend=True`` an in-use extend stops in ``extending`` until
  ``extend_volume_completion`` (the 3.71 flow), else it completes at once.

Returned values are deep copies, like JSON from a server. ``calls`` records
(method, args) for assertions. Test-only helpers: ``create_volume_type``,
``set_status``.
"""

import copy
import datetime
import os
import threading
import uuid

from oslo_log import log as logging

from volumesvc import exception

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3
DEFAULT_TYPE = "__DEFAULT__"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


class _Volume(dict):
    """A volume record that stamps ``updated_at`` on every status change, as Cinder does.

    The dangling-attachment reconciliation reads it to tell an attach that is
    still going from one abandoned long ago.
    """

    def __setitem__(self, key, value):
        if key == "status":
            super().__setitem__("updated_at", _now())
        super().__setitem__(key, value)


def _page(items, marker, limit):
    """Cinder's marker pagination over ``items`` (each with an ``id``)."""
    start = 0
    if marker is not None:
        ids = [item["id"] for item in items]
        if marker not in ids:
            raise exception.Invalid(reason=f"Marker {marker} could not be found.")
        start = ids.index(marker) + 1
    return items[start:start + limit] if limit else items[start:]


class FakeCinder:
    """Same interface as CinderAPI; state lives in this object.

    :param volume_dir: when set, each volume is also a sparse file
        ``volume-<id>`` there and connection info is ``local`` with its path
        (what the real harness's file driver gives), so a real QEMU can use it.
    :param cross_az_attach: mirrors ``[cinder] cross_az_attach``.
    :param hold_extend: in-use extends wait in ``extending`` for completion.
    """

    def __init__(self, volume_dir=None, cross_az_attach=True, hold_extend=False,
                 availability_zone="nova"):
        self.volume_dir = volume_dir
        self.cross_az_attach = cross_az_attach
        self.hold_extend = hold_extend
        self.availability_zone = availability_zone
        self.volumes = {}
        self.attachments = {}
        self.snapshots = {}
        self.volume_types = {}
        self.calls = []
        self._lock = threading.RLock()
        self.create_volume_type(DEFAULT_TYPE)
        if volume_dir:
            os.makedirs(volume_dir, exist_ok=True)

    # -- helpers -----------------------------------------------------------------
    def _record(self, method, *args):
        self.calls.append((method, args))

    def _volume(self, volume_id):
        try:
            return self.volumes[volume_id]
        except KeyError:
            raise exception.VolumeNotFound(volume_id=volume_id) from None

    def _attachment_ref(self, attachment_id):
        try:
            return self.attachments[attachment_id]
        except KeyError:
            raise exception.VolumeAttachmentNotFound(attachment_id=attachment_id) from None

    def _path(self, volume_id):
        return os.path.join(self.volume_dir, f"volume-{volume_id}") if self.volume_dir else None

    def _resize_file(self, volume_id, size):
        path = self._path(volume_id)
        if path:
            with open(path, "ab"):
                pass
            if os.path.getsize(path) < size * GiB:
                os.truncate(path, size * GiB)

    def _refresh_attachments(self, volume):
        volume["attachments"] = [
            {"id": volume["id"], "attachment_id": a["id"], "volume_id": volume["id"],
             "server_id": a["instance"], "host_name": a["host"], "device": a["mountpoint"],
             "attached_at": a["attached_at"]}
            for a in self.attachments.values()
            if a["volume_id"] == volume["id"] and a["status"] == "attached"]

    def create_volume_type(self, name, extra_specs=None, is_public=True):
        """Test helper: add a volume type; ``multiattach='<is> True'`` as in Cinder."""
        with self._lock:
            vtype = {"id": str(uuid.uuid4()), "name": name, "description": None,
                     "is_public": is_public, "extra_specs": dict(extra_specs or {})}
            self.volume_types[vtype["id"]] = vtype
            return copy.deepcopy(vtype)

    def set_status(self, volume_id, status):
        """Test helper: force a status (like Cinder's os-reset_status)."""
        with self._lock:
            self._volume(volume_id)["status"] = status

    # -- volumes -----------------------------------------------------------------
    def get(self, context, volume_id):
        self._record("get", volume_id)
        with self._lock:
            return copy.deepcopy(self._volume(volume_id))

    def get_all(self, context, search_opts=None):
        with self._lock:
            volumes = list(self.volumes.values())
            for key, value in (search_opts or {}).items():
                volumes = [v for v in volumes if v.get(key) == value]
            return copy.deepcopy(volumes)

    def create(self, context, size, name, description, volume_type=None,
               snapshot_id=None, image_id=None, availability_zone=None, metadata=None):
        self._record("create", size, name, volume_type, snapshot_id, image_id)
        with self._lock:
            vtype = self.get_volume_type(context, volume_type or DEFAULT_TYPE)
            if snapshot_id is not None and snapshot_id not in self.snapshots:
                raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
            if int(size) < 1:
                raise exception.Invalid(reason="Volume size must be an integer and >= 1")
            multiattach = vtype["extra_specs"].get("multiattach") == "<is> True"
            volume = _Volume({
                "id": str(uuid.uuid4()), "name": name, "description": description,
                "size": int(size), "status": "available", "attach_status": "detached",
                "multiattach": multiattach, "attachments": [],
                "availability_zone": availability_zone or self.availability_zone,
                "migration_status": None, "bootable": "true" if image_id else "false",
                "volume_type": vtype["name"], "volume_type_id": vtype["id"],
                "snapshot_id": snapshot_id, "source_volid": None,
                "metadata": dict(metadata or {}), "created_at": _now(),
                "user_id": getattr(context, "user_id", None),
                "os-vol-tenant-attr:tenant_id": getattr(context, "project_id", None),
                "updated_at": _now(),
            })
            if image_id:
                volume["volume_image_metadata"] = {"image_id": image_id}
            self.volumes[volume["id"]] = volume
            self._resize_file(volume["id"], volume["size"])
            return copy.deepcopy(volume)

    def delete(self, context, volume_id):
        self._record("delete", volume_id)
        with self._lock:
            volume = self._volume(volume_id)
            has_snapshots = any(snap.get("volume_id") == volume_id
                                for snap in self.snapshots.values())
            if volume["status"] not in ("available", "error", "error_extending") or \
                    volume["attachments"] or has_snapshots:
                raise exception.Invalid(reason=(
                    "Volume status must be available or error or error_restoring or "
                    "error_extending or error_managing and must not be migrating, attached, "
                    "belong to a group, have snapshots, awaiting a transfer, or be "
                    "disassociated from snapshots after volume transfer."))
            del self.volumes[volume_id]
            if self._path(volume_id) and os.path.exists(self._path(volume_id)):
                os.unlink(self._path(volume_id))

    def extend(self, context, volume_id, new_size):
        self._record("extend", volume_id, new_size)
        with self._lock:
            volume = self._volume(volume_id)
            if volume["status"] not in ("available", "in-use"):
                raise exception.Invalid(reason=(
                    "Volume status must be 'available' or 'in-use' to extend, "
                    f"currently {volume['status']}."))
            if int(new_size) <= volume["size"]:
                raise exception.Invalid(reason=(
                    "New size for extend must be greater than current size. "
                    f"(current: {volume['size']}, extended: {new_size})."))
            if volume["status"] == "in-use" and self.hold_extend:
                volume["status"] = "extending"
                volume["extend_new_size"] = int(new_size)
                return
            volume["size"] = int(new_size)
            self._resize_file(volume_id, volume["size"])

    def extend_volume_completion(self, context, volume_id, error):
        self._record("extend_volume_completion", volume_id, bool(error))
        with self._lock:
            volume = self._volume(volume_id)
            if volume["status"] != "extending" or "extend_new_size" not in volume:
                raise exception.Invalid(reason="Volume is not being extended.")
            new_size = volume.pop("extend_new_size")
            if error:
                volume["status"] = "error_extending"
                return
            volume["size"] = new_size
            volume["status"] = "in-use" if volume["attachments"] else "available"
            self._resize_file(volume_id, new_size)

    def begin_detaching(self, context, volume_id):
        self._record("begin_detaching", volume_id)
        with self._lock:
            volume = self._volume(volume_id)
            if volume["status"] != "in-use" or volume["attach_status"] != "attached":
                raise exception.Invalid(reason="Unable to detach volume. Volume status must "
                                               "be 'in-use' and attach_status must be "
                                               "'attached' to detach.")
            volume["status"] = "detaching"

    def roll_detaching(self, context, volume_id):
        self._record("roll_detaching", volume_id)
        with self._lock:
            volume = self._volume(volume_id)
            if volume["status"] == "detaching":
                volume["status"] = "in-use"

    def check_availability_zone(self, volume, instance_az):
        if self.cross_az_attach or instance_az is None:
            return
        if volume.get("availability_zone") != instance_az:
            raise exception.Invalid(reason=(
                f"Server and volume not in same availability_zone: {instance_az} != "
                f"{volume.get('availability_zone')}"))

    # -- volume types --------------------------------------------------------------
    def get_volume_types(self, context):
        with self._lock:
            return copy.deepcopy(list(self.volume_types.values()))

    def get_volume_type(self, context, id_or_name):
        with self._lock:
            for vtype in self.volume_types.values():
                if id_or_name in (vtype["id"], vtype["name"]):
                    return copy.deepcopy(vtype)
        raise exception.VolumeTypeNotFound(id_or_name=id_or_name)

    # -- attachments -----------------------------------------------------------------
    def _connection_info(self, attachment):
        volume_id = attachment["volume_id"]
        if self.volume_dir:
            kind, data = "local", {"device_path": self._path(volume_id)}
        else:
            kind, data = "fake", {}
        data.update(volume_id=volume_id, name=f"volume-{volume_id}", access_mode="rw",
                    encrypted=False, discard=True)
        return {"driver_volume_type": kind, "data": data, "attachment_id": attachment["id"],
                "serial": volume_id, "attach_mode": attachment["attach_mode"]}

    def attachment_create(self, context, volume_id, instance_uuid, connector=None,
                          mountpoint=None, mode=None):
        self._record("attachment_create", volume_id, instance_uuid, connector)
        with self._lock:
            volume = self._volume(volume_id)
            if volume["status"] not in ("available", "in-use"):
                raise exception.Invalid(reason=(
                    "Volume status must be available or in-use or downloading to reserve, "
                    f"but the current status is {volume['status']}."))
            if volume["status"] == "in-use" and not volume["multiattach"]:
                raise exception.Invalid(reason=(
                    f"Volume {volume_id} is in-use and is not multiattach."))
            attachment = {"id": str(uuid.uuid4()), "volume_id": volume_id,
                          "instance": instance_uuid, "status": "reserved",
                          "attach_mode": mode or "null", "connector": None,
                          "connection_info": {}, "host": None, "mountpoint": None,
                          "attached_at": None, "detached_at": None}
            self.attachments[attachment["id"]] = attachment
            volume["status"] = "reserved"
        if connector is not None:
            self.attachment_update(context, attachment["id"], connector, mountpoint)
        return self._attachment_view(attachment["id"])

    def _attachment_view(self, attachment_id):
        with self._lock:
            view = copy.deepcopy(self._attachment_ref(attachment_id))
            for private in ("connector", "host", "mountpoint"):
                view.pop(private)
            return view

    def attachment_get(self, context, attachment_id):
        self._record("attachment_get", attachment_id)
        return self._attachment_view(attachment_id)

    def attachment_get_all(self, context, instance_id=None, volume_id=None):
        self._record("attachment_get_all", instance_id, volume_id)
        with self._lock:
            return [{"id": a["id"], "status": a["status"], "instance": a["instance"],
                     "volume_id": a["volume_id"]}
                    for a in self.attachments.values()
                    if (instance_id is None or a["instance"] == instance_id)
                    and (volume_id is None or a["volume_id"] == volume_id)]

    def attachment_list_page(self, context, *, instance_id=None, marker=None, limit=None):
        """One page of attachment summaries, oldest first (CinderAPI's paging)."""
        self._record("attachment_list_page", instance_id, marker, limit)
        with self._lock:
            items = [{"id": a["id"], "status": a["status"], "instance": a["instance"],
                      "volume_id": a["volume_id"]}
                     for a in self.attachments.values()
                     if instance_id is None or a["instance"] == instance_id]
            return _page(items, marker, limit)

    def volume_id_page(self, context, *, status, marker=None, limit=None):
        self._record("volume_id_page", status, marker, limit)
        with self._lock:
            items = [v for v in self.volumes.values() if v["status"] == status]
            return [v["id"] for v in _page(items, marker, limit)]

    def attachment_update(self, context, attachment_id, connector, mountpoint=None):
        self._record("attachment_update", attachment_id, connector, mountpoint)
        with self._lock:
            attachment = self._attachment_ref(attachment_id)
            if not connector:
                raise exception.Invalid(reason="Must specify 'connector' to update attachment")
            attachment["connector"] = dict(connector)
            attachment["host"] = connector.get("host")
            attachment["mountpoint"] = mountpoint or connector.get("mountpoint")
            attachment["attach_mode"] = (attachment["attach_mode"]
                                         if attachment["attach_mode"] != "null" else "rw")
            if attachment["status"] != "attached":
                attachment["status"] = "attaching"
                self.volumes[attachment["volume_id"]]["status"] = "attaching"
            attachment["connection_info"] = self._connection_info(attachment)
            return copy.deepcopy(attachment["connection_info"])

    def attachment_complete(self, context, attachment_id):
        self._record("attachment_complete", attachment_id)
        with self._lock:
            attachment = self._attachment_ref(attachment_id)
            if attachment["connector"] is None:
                raise exception.Invalid(reason="Attachment has no connector.")
            attachment["status"] = "attached"
            attachment["attached_at"] = _now()
            volume = self.volumes[attachment["volume_id"]]
            volume["status"] = "in-use"
            volume["attach_status"] = "attached"
            self._refresh_attachments(volume)

    def attachment_delete(self, context, attachment_id):
        self._record("attachment_delete", attachment_id)
        with self._lock:
            attachment = self.attachments.pop(attachment_id, None)
            if attachment is None:
                LOG.warning("Attachment %s does not exist. Ignoring.", attachment_id)
                return
            volume = self.volumes.get(attachment["volume_id"])
            if volume is None:
                return
            self._refresh_attachments(volume)
            left = [a for a in self.attachments.values()
                    if a["volume_id"] == volume["id"]]
            if any(a["status"] == "attached" for a in left):
                volume["status"] = "in-use"
            elif left:
                volume["status"] = "reserved"
                volume["attach_status"] = "detached"
            else:
                volume["status"] = "available"
                volume["attach_status"] = "detached"

    # -- snapshots and limits ------------------------------------------------------------
    def create_snapshot_force(self, context, volume_id, name=None, description=None):
        self._record("create_snapshot_force", volume_id)
        with self._lock:
            volume = self._volume(volume_id)
            snapshot = {"id": str(uuid.uuid4()), "volume_id": volume_id, "name": name,
                        "description": description, "size": volume["size"],
                        "status": "available", "created_at": _now(), "metadata": {}}
            self.snapshots[snapshot["id"]] = snapshot
            return copy.deepcopy(snapshot)

    def get_snapshot(self, context, snapshot_id):
        with self._lock:
            if snapshot_id not in self.snapshots:
                raise exception.SnapshotNotFound(snapshot_id=snapshot_id)
            return copy.deepcopy(self.snapshots[snapshot_id])

    def delete_snapshot(self, context, snapshot_id):
        self._record("delete_snapshot", snapshot_id)
        with self._lock:
            if self.snapshots.pop(snapshot_id, None) is None:
                raise exception.SnapshotNotFound(snapshot_id=snapshot_id)

    def get_absolute_limits(self, context):
        with self._lock:
            return {"maxTotalVolumes": 10, "maxTotalSnapshots": 10,
                    "maxTotalVolumeGigabytes": 1000,
                    "totalVolumesUsed": len(self.volumes),
                    "totalGigabytesUsed": sum(v["size"] for v in self.volumes.values()),
                    "totalSnapshotsUsed": len(self.snapshots)}


class CountingCinder:
    """Wraps a Cinder double and counts its calls: one call is one HTTP request.

    Test-only: lets a test assert how many requests a workflow makes to
    Cinder (``requests`` in total, ``by_method`` per adapter method).
    """

    def __init__(self, inner):
        self.inner = inner
        self.by_method = {}
        self._lock = threading.Lock()

    @property
    def requests(self):
        return sum(self.by_method.values())

    def reset(self):
        with self._lock:
            self.by_method.clear()

    def __getattr__(self, name):
        target = getattr(self.inner, name)
        if not callable(target) or name.startswith("_") or name == "check_availability_zone":
            return target

        def counted(*args, **kwargs):
            with self._lock:
                self.by_method[name] = self.by_method.get(name, 0) + 1
            return target(*args, **kwargs)
        return counted
