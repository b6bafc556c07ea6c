"""FakeGlance: an in-memory stand-in for ``GlanceAPI`` in functional tests.

Same public methods as ``volumesvc.image.glance.GlanceAPI`` and the same
rules the real Glance 33 applies to what we use: a record is ``queued``
until data is uploaded, an upload (even empty) makes it ``active`` with the
data's size, property values are stored as strings, and an unknown image
is ImageNotFound. Returned values are deep copies with the adapter's shape
(core attributes plus ``properties``). ``calls`` records (method, args).
"""

import copy
import datetime
import hashlib
import threading
import uuid

from volumesvc import exception
from volumesvc.image import glance

ENDPOINT = "http://glance.example.test:9292"


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGlance:
    """Same interface as GlanceAPI; images live in ``self.images`` (Glance's flat JSON)."""

    def __init__(self, endpoint=ENDPOINT):
        self._endpoint = endpoint
        self.images = {}
        self.data = {}
        self.calls = []
        self._lock = threading.RLock()

    def _record(self, method, *args):
        self.calls.append((method, args))

    def _image(self, image_id):
        try:
            return self.images[image_id]
        except KeyError:
            raise exception.ImageNotFound(image_id=image_id) from None

    def endpoint(self, context):
        return self._endpoint

    def image_url(self, context, image_id):
        return f"{self._endpoint}/images/{image_id}"

    def get(self, context, image_id):
        self._record("get", image_id)
        with self._lock:
            return glance.to_image(copy.deepcopy(self._image(image_id)))

    def list(self, context, **filters):
        self._record("list", filters)
        wanted = {key: glance._property_value(value) for key, value in filters.items()
                  if key not in ("limit", "marker")}
        with self._lock:
            return [glance.to_image(copy.deepcopy(image)) for image in self.images.values()
                    if all(str(image.get(k)) == v for k, v in wanted.items())]

    def create(self, context, *, name, owner, properties=None, disk_format="raw",
               container_format="bare", visibility="private", min_disk=None, size=0,
               data=None):
        self._record("create", name, owner)
        now = _now()
        record = {"id": str(uuid.uuid4()), "name": name, "owner": owner, "status": "queued",
                  "visibility": visibility, "protected": False, "disk_format": disk_format,
                  "container_format": container_format, "size": None,
                  "virtual_size": None, "checksum": None, "min_ram": 0,
                  "min_disk": int(min_disk or 0), "tags": [], "os_hidden": False,
                  "created_at": now, "updated_at": now}
        for key, value in (properties or {}).items():
            if key in glance.CORE_ATTRIBUTES:
                raise exception.Invalid(reason=f"{key} is an image attribute, not a property")
            record[key] = glance._property_value(value)
        with self._lock:
            self.images[record["id"]] = record
        if data is not None:
            self.upload(context, record["id"], data)
        elif size == 0:
            self.upload(context, record["id"], b"")
        return self.get(context, record["id"])

    def upload(self, context, image_id, data):
        self._record("upload", image_id)
        payload = data if isinstance(data, bytes) else data.read()
        with self._lock:
            image = self._image(image_id)
            if image["status"] != "queued":
                raise exception.Conflict(reason=f"Image status transition from "
                                                f"{image['status']} to saving is not allowed")
            self.data[image_id] = payload
            image.update(status="active", size=len(payload),
                         checksum=hashlib.md5(payload, usedforsecurity=False).hexdigest(),
                         updated_at=_now())

    def download(self, context, image_id, path):
        self._record("download", image_id)
        with self._lock:
            self._image(image_id)
            payload = self.data.get(image_id, b"")
        with open(path, "wb") as f:
            f.write(payload)
        return len(payload)

    def delete(self, context, image_id):
        self._record("delete", image_id)
        with self._lock:
            self._image(image_id)
            del self.images[image_id]
