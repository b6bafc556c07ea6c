"""The Cinder adapter: the only module in volumesvc that imports cinderclient.

Why one adapter: every call picks its own volume API microversion (the
behaviour we rely on is pinned per call, not per client), cinderclient's
exceptions are translated into ``volumesvc.exception`` at this boundary, and
results leave as plain dicts, so nothing above this layer knows cinderclient
exists and tests can swap in their double (``tests/fixtures/cinder.py``).

Authentication:

* ``[cinder] auth_strategy = noauth`` (single-machine setup): Cinder takes
  ``X-Auth-Token: <user>:<project>`` and trusts ``X-Service-Roles: service``,
  which we send when acting as the compute service (attachment work), since
  otherwise Cinder asks Nova about in-use attachments with a user token.
* ``keystone``: the user's token from the RequestContext (or the ``[cinder]``
  keystoneauth credentials for contexts without one), wrapped with a service
  token from ``[service_user]`` when ``send_service_user_token`` is set.
"""

import functools
import re
import time

from cinderclient import api_versions
from cinderclient import client as cinder_client
from cinderclient import exceptions as cinder_exception
from keystoneauth1 import exceptions as ks_exception
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import service_token, token_endpoint
from oslo_log import log as logging

from volumesvc import exception
from volumesvc.common import keystone
from volumesvc.volume import pacing

LOG = logging.getLogger(__name__)

MV_BASE = "3.0"
MV_VOLUME_GET = "3.48"          # shared_targets/service_uuid in volume views
MV_EXTEND_IN_USE = "3.42"       # extend of an in-use volume (400 at 3.41)
MV_ATTACHMENTS = "3.44"         # attachment create/update/complete/delete
MV_ATTACHMENT_MODE = "3.54"     # attachment create with a 'mode'
MV_NO_PROJECT_IN_URL = "3.67"   # /v3/<resource> without a project id
MV_REIMAGE = "3.68"             # os-reimage (rebuild of a volume-backed server)
MV_EXTEND_COMPLETION = "3.71"   # os-extend_volume_completion

# Cinder only routes project ids made of hex digits and dashes (noauth's
# "admin" project in a URL is a 404), so anything else goes without one.
_PROJECT_IN_URL = re.compile(r"^[0-9a-fA-F-]+$")
_SERVICE_HEADERS = {"X-Service-Roles": "service"}
_DELETE_RETRIES = 5
# Seconds before the first retry of a refused connection, doubled for each
# further one (keystoneauth's own schedule).
_CONNECT_DELAY = 0.5


def _cinder_message(error):
    return getattr(error, "message", None) or str(error)


def translate(not_found=None, id_arg="resource_id"):
    """Translate cinderclient/keystoneauth errors of the wrapped call.

    ``not_found`` is the volumesvc NotFound subclass raised for a 404, built
    with ``id_arg`` = the first positional argument after the context.
    """
    def decorator(func):
        @functools.wraps(func)
        def wrapper(self, context, *args, **kwargs):
            try:
                return func(self, context, *args, **kwargs)
            except cinder_exception.NotFound as e:
                if not_found is None:
                    raise exception.NotFound(_cinder_message(e)) from e
                resource_id = args[0] if args else next(iter(kwargs.values()), None)
                raise not_found(**{id_arg: resource_id}) from e
            except cinder_exception.BadRequest as e:
                raise exception.Invalid(reason=_cinder_message(e)) from e
            except cinder_exception.Forbidden as e:
                raise exception.Forbidden(_cinder_message(e)) from e
            except cinder_exception.ClientException as e:
                if e.code == 409:
                    raise exception.Conflict(reason=_cinder_message(e)) from e
                raise exception.CinderAPIError(code=e.code, reason=_cinder_message(e)) from e
            except (ks_exception.ConnectionError, ks_exception.EndpointNotFound,
                    cinder_exception.ConnectionError) as e:
                raise exception.CinderConnectionFailed(reason=str(e)) from e
        return wrapper
    return decorator


def overloaded(exc) -> bool:
    """Did ``exc`` say Cinder could not keep up? By type and status only, never by text.

    A 5xx (Cinder's API gave up on its volume service, or failed) or no
    answer at all; a 4xx is the request's own fault and says nothing about
    load.
    """
    if isinstance(exc, (ks_exception.ConnectionError, cinder_exception.ConnectionError)):
        return True
    code = getattr(exc, "code", None)
    return (isinstance(exc, cinder_exception.ClientException) and isinstance(code, int)
            and code >= 500)


def paced(what):
    """Run the wrapped call in one of the process's places for Cinder calls (``pacing``).

    Inside :func:`translate`, so the bound sees cinderclient's own errors
    (a 5xx or no answer halves it) and a call that waited too long for its
    turn leaves as :class:`pacing.PacingTimeout`, a Cinder connection failure.
    """
    def decorator(func):
        @functools.wraps(func)
        def wrapper(self, context, *args, **kwargs):
            with self.pacing.slot(what):
                return func(self, context, *args, **kwargs)
        return wrapper
    return decorator


def _refused(exc) -> bool:
    """True when ``exc`` came of a refused connection: the request never left.

    keystoneauth's ``ConnectFailure`` stands for both a refused connection
    and one that broke after the request was sent; the socket error it was
    raised from tells them apart.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ConnectionRefusedError):
            return True
        exc = exc.__cause__ or exc.__context__ or getattr(exc, "reason", None)
    return False


def _to_dict(resource):
    if resource is None or isinstance(resource, dict):
        return resource
    return resource.to_dict()


class CinderAPI(keystone.SessionFromConf):
    """Volume API v3 client bound to one ConfigOpts (see module docstring)."""

    _GROUP = "cinder"
    # Set once the missing [service_user] auth_type has been logged.
    _service_auth_missing_logged = False

    def __init__(self, conf):
        super().__init__(conf)
        # Back-pressure on what this process sends Cinder (volume/pacing.py):
        # one bound per process, as there is one CinderAPI per process.
        self.pacing = pacing.Pacing(maximum=conf.cinder.max_concurrent_calls,
                                    wait_timeout=conf.cinder.pacing_wait_timeout,
                                    overloaded=overloaded)

    # -- plumbing --------------------------------------------------------------
    def _endpoint(self, context, microversion):
        """(endpoint or None, microversion): put the project in the URL when Cinder can route it.

        Without a routable project the call goes to ``/v3/<resource>``, which
        needs at least 3.67, so the microversion is raised to that. A call
        made with the adapter's own credentials (a context without a token:
        a request replayed by another conductor, a periodic task) never
        names the context's project: Cinder refuses a URL whose project is
        not the token's ("Malformed request url"), and the token is then
        the service user's.
        """
        override = self.conf.cinder.endpoint_override
        if not override:
            return None, microversion
        project = getattr(context, "project_id", None) if self._as_caller(context) else None
        routable = bool(project and _PROJECT_IN_URL.match(project))
        if "%(project_id)s" in override:
            if routable:
                return override % {"project_id": project}, microversion
            override = override.replace("%(project_id)s", "")
        override = override.rstrip("/")
        if override.endswith("/v3"):
            if routable:
                return f"{override}/{project}", microversion
            if api_versions.APIVersion(microversion) < api_versions.APIVersion(
                    MV_NO_PROJECT_IN_URL):
                microversion = MV_NO_PROJECT_IN_URL
        return override, microversion

    def _as_caller(self, context) -> bool:
        """True when a call authenticates as ``context`` (noauth, or the context's token)."""
        return bool(self._noauth or getattr(context, "auth_token", None))

    def _service_user_auth(self, user_auth):
        """Wrap ``user_auth`` with ``[service_user]``'s token (X-Service-Token) when asked to."""
        if not self.conf.service_user.send_service_user_token:
            return user_auth
        if self._service_auth is None:
            self._service_auth = ks_loading.load_auth_from_conf_options(self.conf,
                                                                        "service_user")
        if self._service_auth is None:
            # As Nova does: without [service_user] auth_type there is no
            # service token to add; the user's token alone still works.
            # Said once per adapter: it is a deployment fact, not an event.
            if not self._service_auth_missing_logged:
                LOG.warning("[service_user] send_service_user_token is set but "
                            "[service_user] auth_type is not: no service token sent "
                            "(volumesvc-status upgrade check fails on this)")
                self._service_auth_missing_logged = True
            return user_auth
        return service_token.ServiceTokenAuthWrapper(user_auth=user_auth,
                                                      service_auth=self._service_auth)

    def _auth(self, context, endpoint):
        if self._noauth:
            if not endpoint:
                raise exception.ConfigInvalid(
                    reason="[cinder] endpoint_override is required with auth_strategy=noauth")
            user = getattr(context, "user_id", None) or "admin"
            project = getattr(context, "project_id", None) or "admin"
            return token_endpoint.Token(endpoint, f"{user}:{project}")
        token = getattr(context, "auth_token", None)
        if token:
            user_auth = (token_endpoint.Token(endpoint, token) if endpoint else
                         keystone.ContextTokenAuth(token,
                                                   getattr(context, "service_catalog", None),
                                                   legacy_interfaces=True))
        else:
            user_auth = self._conf_auth()
        return self._service_user_auth(user_auth)

    def client(self, context, microversion=MV_BASE, service=False, connect_retries=None):
        """A cinderclient for one call at ``microversion``.

        ``service=True`` marks the request as coming from the compute service
        (noauth: ``X-Service-Roles: service``; keystone: the service token
        is already on every request when configured). ``connect_retries``
        replaces ``[cinder] http_retries`` for the call.
        """
        endpoint, microversion = self._endpoint(context, microversion)
        service_type, service_name, interface = self.conf.cinder.catalog_info.split(":")
        headers = dict(_SERVICE_HEADERS) if (service and self._noauth) else {}
        return cinder_client.Client(
            microversion, session=self._get_session(), auth=self._auth(context, endpoint),
            endpoint_override=endpoint, service_type=service_type,
            service_name=service_name or None, endpoint_type=interface,
            region_name=self.conf.cinder.os_region_name,
            connect_retries=(self.conf.cinder.http_retries if connect_retries is None
                             else connect_retries),
            global_request_id=getattr(context, "global_id", None),
            additional_headers=headers)

    @translate()
    def max_microversion(self, context):
        """The highest volume API microversion Cinder serves (its version document).

        Asked before a request that needs a newer Cinder than volumesvc
        requires (a read-only attachment's mode, 3.54), so the client gets a
        clear refusal instead of Cinder's 406 after the request was accepted.
        """
        return api_versions.get_highest_version(self.client(context)).get_string()

    # -- volumes ---------------------------------------------------------------
    @translate(exception.VolumeNotFound, "volume_id")
    def get(self, context, volume_id):
        return _to_dict(self.client(context, MV_VOLUME_GET).volumes.get(volume_id))

    @translate(exception.VolumeNotFound, "volume_id")
    def get_volume_encryption(self, context, volume_id):
        """``GET /volumes/{id}/encryption``: how the compute must open the volume.

        ``encryption_key_id`` (None for a plain volume) and, for a volume
        type that encrypts, ``provider``, ``cipher``, ``key_size`` and
        ``control_location``: read once per attach (volumesvc/compute/encryption.py).
        """
        metadata = self.client(context).volumes.get_encryption_metadata(volume_id)
        return dict(metadata)

    @translate()
    def get_all(self, context, search_opts=None):
        volumes = self.client(context, MV_VOLUME_GET).volumes.list(
            detailed=True, search_opts=search_opts)
        return [_to_dict(v) for v in volumes]

    @translate(exception.SnapshotNotFound, "snapshot_id")
    @paced("volume create")
    def create(self, context, size, name, description, volume_type=None,
               snapshot_id=None, image_id=None, availability_zone=None, metadata=None):
        """Create a volume; 404 can only be about the snapshot (types are 400 in Cinder)."""
        volume = self.client(context).volumes.create(
            size, name=name, description=description, volume_type=volume_type,
            snapshot_id=snapshot_id, imageRef=image_id,
            availability_zone=availability_zone, metadata=metadata or {})
        return _to_dict(volume)

    @translate(exception.VolumeNotFound, "volume_id")
    def delete(self, context, volume_id):
        self.client(context).volumes.delete(volume_id)

    @translate(exception.VolumeNotFound, "volume_id")
    def extend(self, context, volume_id, new_size):
        self.client(context, MV_EXTEND_IN_USE).volumes.extend(volume_id, new_size)

    @translate(exception.VolumeNotFound, "volume_id")
    def extend_volume_completion(self, context, volume_id, error):
        """Finish an in-use extend (3.71). Cinder takes any non-empty ``error`` as true."""
        self.client(context, MV_EXTEND_COMPLETION, service=True).volumes \
            .extend_volume_completion(volume_id, bool(error))

    @translate(exception.VolumeNotFound, "volume_id")
    def reimage(self, context, volume_id, image_id, reimage_reserved=False):
        """Ask Cinder to write ``image_id`` over the volume (os-reimage, 3.68).

        Cinder answers 202 at once and copies in its volume service; it tells
        the server the volume is attached to with a ``volume-reimaged``
        external event, and only for a volume it found ``reserved``
        (``reimage_reserved``: the attachment a rebuild keeps without a
        connector). A failed copy leaves the volume ``error`` and sends nothing.
        """
        self.client(context, MV_REIMAGE).volumes.reimage(volume_id, image_id,
                                                         reimage_reserved)

    @translate(exception.VolumeNotFound, "volume_id")
    def migrate_volume_completion(self, context, volume_id, new_volume_id, error):
        """End Cinder's migration of ``volume_id`` to ``new_volume_id`` (swap volume).

        ``error`` True makes Cinder give up the migration (the new volume is
        deleted, the old keeps its data). Returns the id the attachment keeps
        (``save_volume_id``): the old id after a successful migration, since
        Cinder moves the new volume's data under it.
        """
        body = self.client(context, MV_BASE, service=True).volumes \
            .migrate_volume_completion(volume_id, new_volume_id, bool(error))
        return body["save_volume_id"]

    @translate(exception.VolumeNotFound, "volume_id")
    def reset_status(self, context, volume_id, status, attach_status=None):
        """``os-reset_status`` (an admin action): set a volume's status outright.

        Only for putting right what Cinder itself got wrong (see
        volume/migration.py); every other change goes through Cinder's own
        transitions.
        """
        self.client(context, MV_BASE, service=True).volumes.reset_state(
            volume_id, status, attach_status=attach_status)

    @translate(exception.VolumeNotFound, "volume_id")
    def begin_detaching(self, context, volume_id):
        self.client(context).volumes.begin_detaching(volume_id)

    @translate(exception.VolumeNotFound, "volume_id")
    def roll_detaching(self, context, volume_id):
        self.client(context).volumes.roll_detaching(volume_id)

    def check_availability_zone(self, volume, instance_az):
        """Refuse a cross-AZ attach when ``[cinder] cross_az_attach`` is false."""
        if self.conf.cinder.cross_az_attach or instance_az is None:
            return
        if volume.get("availability_zone") != instance_az:
            raise exception.Invalid(reason=(
                f"Server and volume not in same availability_zone: {instance_az} != "
                f"{volume.get('availability_zone')}"))

    # -- volume types ----------------------------------------------------------
    @translate()
    def get_volume_types(self, context):
        return [_to_dict(t) for t in self.client(context).volume_types.list()]

    def get_volume_type(self, context, id_or_name):
        """Find a type by id or by name; VolumeTypeNotFound otherwise."""
        for vtype in self.get_volume_types(context):
            if id_or_name in (vtype.get("id"), vtype.get("name")):
                return vtype
        raise exception.VolumeTypeNotFound(id_or_name=id_or_name)

    # -- attachments -----------------------------------------------------------
    @staticmethod
    def _connector(connector, mountpoint):
        if connector is None:
            return None
        connector = dict(connector)
        if mountpoint:
            connector["mountpoint"] = mountpoint
        return connector

    @staticmethod
    def _attachment(attachment):
        """Attachment dict whose connection_info has the usual os-brick shape.

        The attachments API returns connection_info flattened (``data``'s keys
        next to ``driver_volume_type``); like Nova, rebuild
        ``{"driver_volume_type", "data", "attachment_id", "serial", ...}`` so
        it can go to os-brick and the BDM as is.
        """
        attachment = _to_dict(attachment)
        flat = attachment.get("connection_info")
        if flat:
            data = dict(flat)
            data.pop("attachment_id", None)
            attachment["connection_info"] = {
                "driver_volume_type": data.pop("driver_volume_type", None),
                "data": data,
                "attachment_id": attachment.get("id"),
                "serial": attachment.get("volume_id"),
                "attach_mode": attachment.get("attach_mode"),
            }
        return attachment

    @translate(exception.VolumeNotFound, "volume_id")
    @paced("attachment create")
    def attachment_create(self, context, volume_id, instance_uuid, connector=None,
                          mountpoint=None, mode=None):
        """Reserve the volume for ``instance_uuid`` (connector None) or connect it now.

        ``mode`` ('rw'/'ro') needs 3.54; without it 3.44 is used.

        The create is sent again (``[cinder] http_retries`` times, as
        keystoneauth would) only when the connection was refused: then it
        never reached Cinder. keystoneauth would also send it again after a
        connection that broke with the request sent (a cinder-api killed
        while it answered), and Cinder, which lets a server hold two
        attachments of a volume, would make a second one. Such a failure is
        raised at once; the caller's rollback, and the compute's
        reconciliation once it is stale, take care of the attachment Cinder
        may have made.
        """
        microversion = MV_ATTACHMENT_MODE if mode else MV_ATTACHMENTS
        client = self.client(context, microversion, service=True, connect_retries=0)
        for attempt in range(self.conf.cinder.http_retries + 1):
            try:
                attachment = client.attachments.create(
                    volume_id, self._connector(connector, mountpoint), instance_uuid,
                    mode=mode or "null")
                break
            except ks_exception.ConnectFailure as exc:
                if attempt >= self.conf.cinder.http_retries or not _refused(exc):
                    raise
                LOG.warning("Cinder refused the connection for an attachment of volume %s; "
                            "retrying in %.1f s", volume_id, _CONNECT_DELAY * 2 ** attempt)
                time.sleep(_CONNECT_DELAY * 2 ** attempt)
        return self._attachment(attachment)

    @translate(exception.VolumeAttachmentNotFound, "attachment_id")
    def attachment_get(self, context, attachment_id):
        return self._attachment(
            self.client(context, MV_ATTACHMENTS, service=True).attachments.show(attachment_id))

    @translate()
    def attachment_get_all(self, context, instance_id=None, volume_id=None, *,
                           all_tenants=False):
        """The attachments of ``instance_id`` and/or ``volume_id``.

        Cinder lists the attachments of the context's project only, unless
        ``all_tenants`` (honoured for admins): a service recovering a
        tenant's server must pass it, or it never sees the tenant's volumes.
        """
        search: dict = {"all_tenants": 1} if all_tenants else {}
        if instance_id:
            search["instance_id"] = instance_id
        if volume_id:
            search["volume_id"] = volume_id
        attachments = self.client(context, MV_ATTACHMENTS, service=True).attachments.list(
            search_opts=search)
        return [_to_dict(a) for a in attachments]

    @translate()
    def attachment_list_page(self, context, *, instance_id=None, marker=None, limit=None):
        """One page of attachments (one request), in every project when allowed.

        ``all_tenants`` is honoured by Cinder for admins only; otherwise the
        page holds the context's project. Cinder caps a page at its
        ``osapi_max_limit`` (1000) whatever ``limit`` says, so callers page
        with :func:`list_all` until a short page.
        """
        search = {"all_tenants": 1}
        if instance_id:
            search["instance_id"] = instance_id
        attachments = self.client(context, MV_ATTACHMENTS, service=True).attachments.list(
            search_opts=search, marker=marker, limit=limit)
        return [_to_dict(a) for a in attachments]

    @translate()
    def volume_id_page(self, context, *, status, marker=None, limit=None):
        """One page of the ids of volumes in ``status``, every project (admins)."""
        volumes = self.client(context, MV_VOLUME_GET).volumes.list(
            detailed=False, search_opts={"status": status, "all_tenants": 1},
            marker=marker, limit=limit)
        return [v.id for v in volumes]

    @translate(exception.VolumeAttachmentNotFound, "attachment_id")
    @paced("attachment update")
    def attachment_update(self, context, attachment_id, connector, mountpoint=None):
        """Give Cinder our connector; return the connection_info (with attachment_id)."""
        attachment = self.client(context, MV_ATTACHMENTS, service=True).attachments.update(
            attachment_id, self._connector(connector, mountpoint))
        return self._attachment(attachment).get("connection_info") or {}

    @translate(exception.VolumeAttachmentNotFound, "attachment_id")
    @paced("attachment complete")
    def attachment_complete(self, context, attachment_id):
        self.client(context, MV_ATTACHMENTS, service=True).attachments.complete(attachment_id)

    @translate(exception.VolumeAttachmentNotFound, "attachment_id")
    @paced("attachment delete")
    def attachment_delete(self, context, attachment_id):
        """Delete as the compute service: up to 5 tries on 500/504; 404 only warns."""
        attempt = 0
        while True:
            attempt += 1
            try:
                self.client(context, MV_ATTACHMENTS, service=True).attachments.delete(
                    attachment_id)
                return
            except cinder_exception.NotFound:
                LOG.warning("Attachment %s does not exist. Ignoring.", attachment_id)
                return
            except cinder_exception.ClientException as e:
                if e.code not in (500, 504) or attempt >= _DELETE_RETRIES:
                    raise
                LOG.warning("Deleting attachment %s failed with %s, retry %d/%d",
                            attachment_id, e.code, attempt, _DELETE_RETRIES)
                time.sleep(min(2 ** (attempt - 1), 4) * 0.5)

    # -- snapshots and limits ----------------------------------------------------
    @translate(exception.VolumeNotFound, "volume_id")
    def create_snapshot_force(self, context, volume_id, name=None, description=None,
                              metadata=None):
        """Snapshot even an in-use volume (``force`` is needed up to 3.65).

        ``metadata`` is recorded with the snapshot in the same request, so a
        process that dies before Cinder answers still left it marked.
        """
        return _to_dict(self.client(context).volume_snapshots.create(
            volume_id, force=True, name=name, description=description, metadata=metadata))

    @translate(exception.SnapshotNotFound, "snapshot_id")
    def get_snapshot(self, context, snapshot_id):
        return _to_dict(self.client(context).volume_snapshots.get(snapshot_id))

    @translate(exception.SnapshotNotFound, "snapshot_id")
    def delete_snapshot(self, context, snapshot_id):
        self.client(context).volume_snapshots.delete(snapshot_id)

    @translate(exception.SnapshotNotFound, "snapshot_id")
    def set_snapshot_metadata(self, context, snapshot_id, metadata):
        """Add (or overwrite) the keys of ``metadata`` on the snapshot; others stay."""
        self.client(context).volume_snapshots.set_metadata(snapshot_id, metadata)

    @translate(exception.SnapshotNotFound, "snapshot_id")
    def delete_snapshot_metadata(self, context, snapshot_id, keys):
        """Remove the metadata ``keys`` from the snapshot; the others stay."""
        self.client(context).volume_snapshots.delete_metadata(snapshot_id, list(keys))

    @translate()
    def snapshot_page(self, context, *, status, marker=None, limit=None):
        """One page of the snapshots in ``status`` (with their metadata), every project."""
        snapshots = self.client(context).volume_snapshots.list(
            search_opts={"status": status, "all_tenants": 1}, marker=marker, limit=limit)
        return [_to_dict(s) for s in snapshots]

    @translate(exception.SnapshotNotFound, "snapshot_id")
    def update_snapshot_status(self, context, snapshot_id, status, progress=None):
        """``os-update_snapshot_status``: how an assisted snapshot is going.

        Cinder's remotefs driver polls the snapshot for ``creating``/90%
        (or ``deleting``/90%) after it asked for the snapshot, and fails it on
        ``error``/``error_deleting``.
        """
        update = {"status": status}
        if progress is not None:
            update["progress"] = progress
        self.client(context).volume_snapshots.update_snapshot_status(snapshot_id, update)

    @translate()
    def get_absolute_limits(self, context):
        """{'maxTotalVolumes': ..., 'totalGigabytesUsed': ..., ...}."""
        limits = self.client(context).limits.get()
        return {item.name: item.value for item in limits.absolute}


def list_all(page, page_size, key=None, **kwargs):
    """Every item ``page(marker=, limit=, **kwargs)`` yields, one request per page.

    The marker is the last item's id (``key(item)``, default ``item["id"]``);
    a page shorter than ``page_size`` ends the walk.
    """
    key = key or (lambda item: item["id"])
    items, marker = [], None
    while True:
        chunk = page(marker=marker, limit=page_size, **kwargs)
        items.extend(chunk)
        if len(chunk) < page_size or not chunk:
            return items
        marker = key(chunk[-1])
