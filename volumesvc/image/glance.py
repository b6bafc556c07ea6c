"""The Glance adapter: the only module in volumesvc that talks to the Image API.

Plain HTTP on the Image API v2 through a keystoneauth session (no
glanceclient: the few calls we make do not need it). Glance's errors are
translated into ``volumesvc.exception`` here, and images leave as plain dicts
with Nova's shape: the core attributes at the top and every custom property
under ``properties``, so nothing above this layer knows Glance flattens
them. Tests swap in their double (``tests/fixtures/glance.py``).

Authentication (``[glance] auth_strategy``):

* ``noauth``: no token; Glance runs its unauthenticated pipeline. Such a
  Glance sets ``owner=None`` unless told otherwise, so :meth:`create` always
  sends ``owner``.
* ``keystone``: the user's token from the RequestContext (or the ``[glance]``
  keystoneauth credentials for contexts without one).
"""

import html.parser
import json

from keystoneauth1 import exceptions as ks_exception
from keystoneauth1 import token_endpoint
from oslo_log import log as logging

from volumesvc import exception
from volumesvc.common import keystone

LOG = logging.getLogger(__name__)

# Attributes of Glance's image schema; everything else is a custom property.
CORE_ATTRIBUTES = frozenset({
    "id", "name", "status", "visibility", "protected", "checksum", "os_hash_algo",
    "os_hash_value", "owner", "size", "virtual_size", "min_ram", "min_disk", "created_at",
    "updated_at", "disk_format", "container_format", "tags", "self", "file", "schema",
    "direct_url", "locations", "os_hidden", "stores",
})
_PAGE_SIZE = 100


def _property_value(value) -> str:
    """Glance v2 properties are strings: JSON for lists/dicts, ``True`` for booleans."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


class _PageText(html.parser.HTMLParser):
    """The text of an HTML error page, without its title and heading (the status line)."""

    _SKIPPED = frozenset({"title", "h1", "style", "script"})

    def __init__(self):
        super().__init__()
        self.parts: list = []
        self._skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in self._SKIPPED:
            self._skipping += 1

    def handle_endtag(self, tag):
        if tag in self._SKIPPED and self._skipping:
            self._skipping -= 1

    def handle_data(self, data):
        if not self._skipping:
            self.parts.append(data)


def error_text(status_code: int, body: str) -> str:
    """Glance's reason for an error as one plain line.

    Glance answers errors with webob's pages: HTML (what clients that take
    any type get), JSON or plain text, each repeating the status line. A
    Nova fault carries the reason alone, never markup.
    """
    text = body or ""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        inner = error if isinstance(error, dict) else parsed
        text = str(inner.get("message") or inner.get("explanation") or inner.get("title")
                   or text)
    elif "<" in text:
        page = _PageText()
        page.feed(text)
        page.close()
        text = " ".join(page.parts)
    lines = text.strip().splitlines()
    if len(lines) > 1 and lines[0].startswith(f"{status_code} "):
        lines = lines[1:]  # webob's plain text starts with "<code> <title>"
    line = " ".join(" ".join(lines).split())
    return line[:500] or f"HTTP {status_code}"


def to_image(body: dict) -> dict:
    """Glance's flat image JSON → core attributes plus ``properties``."""
    image = {key: value for key, value in body.items() if key in CORE_ATTRIBUTES}
    image["properties"] = {key: value for key, value in body.items()
                           if key not in CORE_ATTRIBUTES}
    return image


class GlanceAPI(keystone.SessionFromConf):
    """Image API v2 client bound to one ConfigOpts (see module docstring)."""

    _GROUP = "glance"

    # -- plumbing --------------------------------------------------------------
    def _override(self):
        """``endpoint_override`` without a trailing ``/v2``, or None."""
        override = self.conf.glance.endpoint_override
        if not override:
            return None
        override = override.rstrip("/")
        return override[:-3] if override.endswith("/v2") else override

    def _auth(self, context):
        if self._noauth:
            if not self._override():
                raise exception.ConfigInvalid(
                    reason="[glance] endpoint_override is required with auth_strategy=noauth")
            return None
        token = getattr(context, "auth_token", None)
        if token:
            if self._override():
                return token_endpoint.Token(self._override(), token)
            return keystone.ContextTokenAuth(token, getattr(context, "service_catalog", None))
        return self._conf_auth()

    def _filter(self):
        service_type, service_name, interface = self.conf.glance.catalog_info.split(":")
        return {"service_type": service_type, "service_name": service_name or None,
                "interface": interface, "region_name": self.conf.glance.region_name}

    def endpoint(self, context) -> str:
        """The Image API root (no version), e.g. ``http://127.0.0.1:9292``."""
        override = self._override()
        if override:
            return override
        try:
            url = self._get_session().get_endpoint(self._auth(context), **self._filter())
        except (ks_exception.EndpointNotFound, ks_exception.ConnectionError) as e:
            raise exception.GlanceConnectionFailed(reason=str(e)) from e
        url = url.rstrip("/")
        return url[:-3] if url.endswith("/v2") else url

    def image_url(self, context, image_id) -> str:
        """What Nova puts in createImage's ``Location``: ``<glance root>/images/<id>``."""
        return f"{self.endpoint(context)}/images/{image_id}"

    def _request(self, context, method, path, *, image_id=None, **kwargs):
        """One call on ``/v2<path>``; Glance's errors become volumesvc exceptions."""
        headers = kwargs.pop("headers", {})
        request_id = getattr(context, "global_id", None)
        if request_id:
            headers["X-OpenStack-Request-ID"] = request_id
        try:
            response = self._get_session().request(
                "/v2" + path, method, auth=self._auth(context),
                endpoint_override=self._override(),
                endpoint_filter=None if self._override() else self._filter(),
                connect_retries=self.conf.glance.num_retries, raise_exc=False,
                headers=headers, **kwargs)
        except (ks_exception.ConnectionError, ks_exception.EndpointNotFound) as e:
            raise exception.GlanceConnectionFailed(reason=str(e)) from e
        if response.status_code < 400:
            return response
        reason = error_text(response.status_code, response.text)
        if response.status_code == 404 and image_id is not None:
            raise exception.ImageNotFound(image_id=image_id)
        if response.status_code == 404:
            raise exception.NotFound(reason)
        if response.status_code == 400:
            raise exception.Invalid(reason=reason)
        if response.status_code in (401, 403):
            raise exception.Forbidden(f"Glance refused the request: {reason}")
        if response.status_code == 409:
            raise exception.Conflict(reason=reason)
        raise exception.GlanceAPIError(code=response.status_code, reason=reason)

    # -- images ------------------------------------------------------------------
    def get(self, context, image_id) -> dict:
        """The image (core attributes + ``properties``); ImageNotFound on 404."""
        return to_image(self._request(context, "GET", f"/images/{image_id}",
                                      image_id=image_id).json())

    def list(self, context, **filters) -> list:
        """Every image the caller sees, following Glance's ``next`` links.

        ``filters`` are Glance's query parameters (``name=``, ``bdm_v2=True``...).
        """
        params: dict[str, str | int] = {key: _property_value(value)
                                        for key, value in filters.items()}
        params.setdefault("limit", _PAGE_SIZE)
        images: list[dict] = []
        while True:
            body = self._request(context, "GET", "/images", params=params).json()
            images.extend(to_image(item) for item in body.get("images", []))
            marker = body.get("next")
            if not marker or not body.get("images"):
                return images
            params = dict(params, marker=body["images"][-1]["id"])

    def create(self, context, *, name, owner, properties=None, disk_format="raw",
               container_format="bare", visibility="private", min_disk=None, size=0,
               data=None, image_id=None) -> dict:
        """Create an image record and, unless ``size`` is None, upload its data.

        ``image_id``: the id the record gets (Glance takes one chosen by its
        caller), so what was made for a request can be found again without
        its answer (a createImage whose API process died).

        ``data`` (bytes or a file) is uploaded when given; with ``data=None``
        and ``size=0`` an empty body is uploaded, which makes a zero-byte
        image ``active`` at once (a volume-backed snapshot). ``size=None``
        with no data leaves the record ``queued``. ``owner`` is always sent:
        a Glance without keystone would otherwise record none. Property
        values are sent as strings (lists and dicts as JSON).
        """
        body = {"name": name, "owner": owner, "disk_format": disk_format,
                "container_format": container_format, "visibility": visibility}
        if min_disk is not None:
            body["min_disk"] = int(min_disk)
        if image_id is not None:
            body["id"] = image_id
        for key, value in (properties or {}).items():
            if key in CORE_ATTRIBUTES:
                raise exception.Invalid(reason=f"{key} is an image attribute, not a property")
            body[key] = _property_value(value)
        image = self._request(context, "POST", "/images", json=body).json()
        if data is None and size != 0:
            return to_image(image)
        try:
            self.upload(context, image["id"], b"" if data is None else data)
        except Exception:
            # NOTE: a record whose upload failed stays queued for ever.
            self._delete_quietly(context, image["id"])
            raise
        return self.get(context, image["id"])

    def _delete_quietly(self, context, image_id) -> None:
        try:
            self.delete(context, image_id)
        except Exception:  # noqa: BLE001 - the original failure is what matters
            LOG.exception("Could not delete image %s after its upload failed", image_id)

    def upload(self, context, image_id, data) -> None:
        """PUT the image data (bytes or a file object); 204 from Glance."""
        self._request(context, "PUT", f"/images/{image_id}/file", image_id=image_id,
                      data=data, headers={"Content-Type": "application/octet-stream"})

    def download(self, context, image_id, path, chunk_size=1 << 20) -> int:
        """Stream the image data into the file ``path``; returns the bytes written.

        Used by computes for an image-backed local root disk; streamed so a
        large image never sits in memory.
        """
        response = self._request(context, "GET", f"/images/{image_id}/file",
                                 image_id=image_id, stream=True)
        written = 0
        with open(path, "wb") as f:
            for chunk in response.iter_content(chunk_size):
                f.write(chunk)
                written += len(chunk)
        return written

    def delete(self, context, image_id) -> None:
        self._request(context, "DELETE", f"/images/{image_id}", image_id=image_id)
