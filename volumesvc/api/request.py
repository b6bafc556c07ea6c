"""The per-request view handed to handlers (context, version, inputs, deps)."""

import dataclasses

from flask import request

from volumesvc.api import microversions as mv


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
    deps: object
    project_id: str = None

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

    http_proxy_to_wsgi has already rewritten the environ from X-Forwarded-*,
    so ``request.url_root`` is what the client (or its proxy) sees.
    """
    root = request.url_root.rstrip("/")
    prefix = conf.api.compute_link_prefix
    if prefix:
        return prefix.rstrip("/")
    return root
