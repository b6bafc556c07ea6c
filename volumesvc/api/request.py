"""The per-request view handed to handlers (context, version, inputs, deps)."""

import dataclasses

from flask import request
from oslo_utils import uuidutils

from volumesvc import exception
from volumesvc.api import microversions as mv
from volumesvc.api.deps import Deps
from volumesvc.objects import instance as instance_obj


@dataclasses.dataclass
class ApiRequest:
    """What a handler gets instead of reaching into Flask globals.

    ``body`` and ``query`` are already validated against the schemas the
    handler declared for ``version``; ``query`` maps each key to its list of
    values (a parameter may repeat).
    """

    context: object
    version: mv.Version
    body: object
    query: dict
    deps: Deps
    project_id: str | None = None

    @property
    def conf(self):
        return self.deps.conf

    def is_at_least(self, version: mv.Version) -> bool:
        return self.version >= version

    def last(self, key, default=None):
        """The last value of a query parameter (Nova uses the last one)."""
        values = self.query.get(key)
        return values[-1] if values else default


def base_url(conf) -> str:
    """Scheme://host[:port][/script] the client used, or [api] compute_link_prefix.

    With ``[oslo_middleware] enable_proxy_headers_parsing`` on (off by
    default: clients could forge them), http_proxy_to_wsgi has already
    rewritten the environ from X-Forwarded-*/Forwarded, so
    ``request.url_root`` is what the client of the proxy sees.
    """
    root = request.url_root.rstrip("/")
    prefix = conf.api.compute_link_prefix
    if prefix:
        return prefix.rstrip("/")
    return root


def get_instance(req, server_id, read_deleted=None):
    """The instance the caller may see, else 404 (other projects' look missing).

    Every /servers/{id}/... handler starts here, so project isolation and the
    404 for a malformed id are decided in one place. ``read_deleted="yes"``
    is for the few views that still show deleted servers (instance actions).
    """
    ctx = req.context
    if not uuidutils.is_uuid_like(server_id):
        raise exception.InstanceNotFound(instance_id=server_id)
    instance = instance_obj.get_by_uuid(req.deps.db, ctx, server_id, read_deleted=read_deleted)
    if not ctx.is_admin and instance.project_id != ctx.project_id:
        raise exception.InstanceNotFound(instance_id=server_id)
    return instance
