"""API errors: stable error codes, fault names and the central exception map.

Domain exceptions (``volumesvc.exception``) know nothing about HTTP. This
module is the one place that decides their status code: the app's single
error handler (``_handle_error`` in ``api/app.py``, registered for every
exception) turns whatever was raised into an :class:`APIError` with
:func:`to_api_error`, so no error ever leaves as HTML or a traceback. The
body is Nova's fault shape ``{"<faultName>": {"code": <status>, "message":
...}}``; the stable dotted code rides in the ``OpenStack-Error-Code`` header,
because Nova clients (and tempest) read only the body's two keys.
"""

import logging

import oslo_messaging as messaging
import werkzeug.exceptions

from volumesvc import exception
from volumesvc.common import outage

LOG = logging.getLogger(__name__)

ERROR_CODE_HEADER = "OpenStack-Error-Code"

# Stable error codes, defined once and never reused for another meaning.
UNKNOWN = "volumesvc.unknown"
NOT_FOUND = "volumesvc.not_found"
ROUTE_NOT_FOUND = "volumesvc.route.not_found"
METHOD_NOT_ALLOWED = "volumesvc.route.method_not_allowed"
BAD_REQUEST = "volumesvc.request.invalid"
SCHEMA_INVALID = "volumesvc.request.schema_invalid"
QUERY_INVALID = "volumesvc.request.query_invalid"
MALFORMED_JSON = "volumesvc.request.malformed_json"
MEDIA_TYPE = "volumesvc.request.media_type"
VERSION_INVALID = "volumesvc.microversion.invalid"
VERSION_UNSUPPORTED = "volumesvc.microversion.unsupported"
AUTH_MISSING = "volumesvc.auth.missing"
POLICY_DENIED = "volumesvc.policy.denied"
CONFLICT = "volumesvc.conflict"
SERVICE_NOT_FOUND = "volumesvc.service.not_found"
SERVICE_IN_USE = "volumesvc.service.in_use"
UNAVAILABLE = "volumesvc.unavailable"
RESPONSE_INVALID = "volumesvc.response.schema_invalid"
ATTACHMENT_INVALID = "volumesvc.attachment.invalid"
ATTACHMENT_CONFLICT = "volumesvc.attachment.conflict"
ATTACHMENT_NOT_FOUND = "volumesvc.attachment.not_found"
TOO_MANY_DISK_DEVICES = "volumesvc.attachment.too_many_devices"
CONDUCTOR_TOO_OLD = "volumesvc.conductor.too_old"
OVER_LIMIT = "volumesvc.request.over_limit"
TOO_LARGE = "volumesvc.request.too_large"
QUOTA_EXCEEDED = "volumesvc.quota.exceeded"

FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    414: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    431: "overLimit",
    501: "notImplemented",
    503: "serviceUnavailable",
}

# Domain exception class -> (status, code). Looked up along the MRO, so a
# subclass inherits its parent's mapping unless it has its own line here.
DOMAIN_MAP = {
    exception.ServiceNotFound: (404, SERVICE_NOT_FOUND),
    exception.HostBinaryNotFound: (404, SERVICE_NOT_FOUND),
    exception.NotFound: (404, NOT_FOUND),
    exception.Invalid: (400, BAD_REQUEST),
    exception.Conflict: (409, CONFLICT),
    exception.InstanceInvalidState: (409, CONFLICT),
    exception.InstanceIsLocked: (409, CONFLICT),
    exception.UnexpectedTaskStateError: (409, CONFLICT),
    exception.Forbidden: (403, POLICY_DENIED),
    exception.OverQuota: (403, QUOTA_EXCEEDED),
    exception.ServiceUnavailable: (503, UNAVAILABLE),
    # Volume attachments (doc/source/contributor/contract.rst §3.2-3.4).
    exception.TooManyDiskDevices: (403, TOO_MANY_DISK_DEVICES),
    exception.DevicePathInUse: (409, ATTACHMENT_CONFLICT),
    exception.VolumeAlreadyAttached: (400, ATTACHMENT_INVALID),
    exception.TaggedAttachmentNotSupported: (400, ATTACHMENT_INVALID),
    exception.MultiattachNotSupportedByVirtDriver: (400, ATTACHMENT_INVALID),
    exception.MultiattachNotSupportedOldMicroversion: (400, ATTACHMENT_INVALID),
    exception.MultiattachNotSupportedByHost: (409, ATTACHMENT_CONFLICT),
    exception.InvalidDevicePath: (400, ATTACHMENT_INVALID),
    exception.MultiattachToShelvedNotSupported: (400, ATTACHMENT_INVALID),
    exception.VolumeTaggedAttachToShelvedNotSupported: (400, ATTACHMENT_INVALID),
    exception.CannotDetachRootVolume: (400, ATTACHMENT_INVALID),
    exception.AttachmentPropertyNotMutable: (400, ATTACHMENT_INVALID),
    exception.MultiattachSwapVolumeNotSupported: (400, ATTACHMENT_INVALID),
    exception.VolumeNotAttachedToInstance: (404, ATTACHMENT_NOT_FOUND),
    exception.SwapVolumeNotMigrating: (409, ATTACHMENT_CONFLICT),
    exception.SwapVolumeInvalid: (400, ATTACHMENT_INVALID),
    exception.ReadOnlyVolumeAttachedReadWrite: (400, ATTACHMENT_INVALID),
    exception.ReadOnlyAttachNotSupportedByCinder: (409, ATTACHMENT_CONFLICT),
    exception.ComputeHostDown: (409, ATTACHMENT_CONFLICT),
    exception.ConductorTooOld: (503, CONDUCTOR_TOO_OLD),
}

# Default codes for HTTP errors raised without one (werkzeug aborts).
_STATUS_CODES = {
    400: BAD_REQUEST,
    401: AUTH_MISSING,
    403: POLICY_DENIED,
    404: ROUTE_NOT_FOUND,
    405: METHOD_NOT_ALLOWED,
    409: CONFLICT,
    413: TOO_LARGE,
    414: TOO_LARGE,
    431: TOO_LARGE,
    415: MEDIA_TYPE,
}


class APIError(Exception):
    """An error decided by the API layer itself (validation, auth, versions).

    ``headers`` are extra response headers (``Allow`` on a 405).
    """

    def __init__(self, status: int, message: str, code: str | None = None, headers=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or _STATUS_CODES.get(status, UNKNOWN)
        self.headers = list(headers or [])


def fault_name(status: int) -> str:
    return FAULT_NAMES.get(status, "computeFault")


def fault_body(status: int, message: str) -> dict:
    return {fault_name(status): {"code": status, "message": message}}


def _from_domain(exc: exception.VolumesvcException) -> APIError:
    if isinstance(exc, exception.CinderAPIError) and (exc.kwargs.get("code") or 500) >= 500:
        # Cinder failed, not the request: a client may retry once Cinder
        # recovers (seen as "Unexpected API Error" 500s when a storm of 1000
        # attaches overran Cinder's one API worker).
        return APIError(503, exc.format_message(), UNAVAILABLE)
    for klass in type(exc).__mro__:
        if klass in DOMAIN_MAP:
            status, code = DOMAIN_MAP[klass]
            return APIError(status, exc.format_message(), code)
    LOG.error("Unmapped domain exception %s: %s", type(exc).__name__, exc)
    return APIError(500, _GENERIC_500, UNKNOWN)


_GENERIC_500 = ("Unexpected API Error. The volumesvc-api log has the details under this "
                "request's x-openstack-request-id; please report it to your operator.")


_DATABASE_BUSY = ("The database rolled this request back to resolve a conflict with "
                  "concurrent requests; nothing was changed. Retry the request.")


def to_api_error(exc: BaseException) -> APIError:
    """Turn any exception raised while serving a request into an APIError."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, exception.VolumesvcException):
        return _from_domain(exc)
    if isinstance(exc, werkzeug.exceptions.HTTPException):
        status = exc.code or 500
        headers = []
        if isinstance(exc, werkzeug.exceptions.MethodNotAllowed) and exc.valid_methods:
            methods = set(exc.valid_methods) - {"HEAD", "OPTIONS"}
            headers.append(("Allow", ", ".join(sorted(methods))))
        message = exc.description or exc.name
        if status == 404:
            message = "The resource could not be found."
        elif status == 413:
            message = ("Request is too large: the body may have at most "
                       "[oslo_middleware] max_request_body_size bytes.")
        return APIError(status, message, _STATUS_CODES.get(status, UNKNOWN), headers)
    if isinstance(exc, messaging.RPCVersionCapError):
        # The request needs a conductor RPC version above ``[upgrade_levels]
        # conductor`` (a rolling upgrade is under way): the message was never
        # sent, and the client may retry once the upgrade is complete.
        return _from_domain(exception.ConductorTooOld())
    kind = outage.classify(exc)
    if kind is outage.Failure.DATABASE_DOWN:
        # The database is down or every pooled connection is busy: the
        # request may succeed when retried, so 503, not "Unexpected" 500.
        LOG.warning("Database unavailable while serving an API request: %s", exc)
        return APIError(503, exception.DatabaseUnavailable.MESSAGE, UNAVAILABLE)
    if kind is outage.Failure.DATABASE_BUSY:
        # The database chose this request's transaction as a deadlock's victim
        # more times than the call retries: it is rolled back, nothing is
        # half-written, and the same request may well succeed in a moment.
        LOG.warning("Database deadlock outlasted the retries of an API request: %s", exc)
        return APIError(503, _DATABASE_BUSY, UNAVAILABLE)
    LOG.exception("Unexpected error while serving an API request")
    return APIError(500, _GENERIC_500, UNKNOWN)
