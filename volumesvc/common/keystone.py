"""keystoneauth plumbing shared by the Cinder and Glance adapters.

Why here: both adapters authenticate the same way (no token in noauth, else
the user's token with an endpoint from the context's catalog, or the
``[<group>]`` credentials for contexts without one) and keep one session per
adapter. Only keystoneauth lives here; each adapter stays the only importer
of its own client library.
"""

from keystoneauth1 import exceptions as ks_exception
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import plugin as ks_plugin


class ContextTokenAuth(ks_plugin.BaseAuthPlugin):
    """The user's keystone token, with the service's endpoint from the context's catalog.

    ``legacy_interfaces``: also accept v2-style names (``publicURL``) for the
    interface and the catalog entries; Cinder's ``catalog_info`` uses them.
    """

    def __init__(self, token, catalog, legacy_interfaces=False):
        self._token = token
        self._catalog = catalog or []
        self._legacy = legacy_interfaces

    def get_token(self, *args, **kwargs):
        return self._token

    def get_endpoint(self, session, service_type=None, interface=None, region_name=None,
                     **kwargs):
        if self._legacy:
            interface = (interface or "public").replace("URL", "")
        for service in self._catalog:
            if service.get("type") != service_type:
                continue
            for ep in service.get("endpoints", []):
                if region_name and ep.get("region") != region_name:
                    continue
                if ep.get("interface", interface) == interface and ep.get("url"):
                    return ep["url"]
                if self._legacy and ep.get(f"{interface}URL"):
                    return ep[f"{interface}URL"]
        raise ks_exception.EndpointNotFound(f"no {service_type} endpoint in the catalog")


class SessionFromConf:
    """Base of an adapter configured by one ConfigOpts group (``_GROUP``).

    The keystoneauth session and the group's service credentials are loaded
    on first use and kept, so an adapter built at start-up costs nothing
    until it calls out (and tests can set ``_session`` to a stub).
    """

    _GROUP = None

    def __init__(self, conf):
        self.conf = conf
        self._session = None
        self._admin_auth = None
        self._service_auth = None

    @property
    def _noauth(self):
        return self.conf[self._GROUP].auth_strategy == "noauth"

    def _get_session(self):
        if self._session is None:
            self._session = ks_loading.load_session_from_conf_options(self.conf, self._GROUP)
        return self._session

    def _conf_auth(self):
        """The group's own credentials, for contexts that carry no token."""
        if self._admin_auth is None:
            self._admin_auth = ks_loading.load_auth_from_conf_options(self.conf, self._GROUP)
        return self._admin_auth
