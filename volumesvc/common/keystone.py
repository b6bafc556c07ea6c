"""keystoneauth plumbing shared by the Cinder and Glance adapters.

Why here: both adapters authenticate the same way (no token in noauth, else
the user's token with an endpoint from the context's catalog, or the
``[<group>]`` credentials for contexts without one) and keep one session per
adapter. Only keystoneauth lives here; each adapter stays the only importer
of its own client library.
"""

import os

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

    _GROUP: str

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
            self._session = without_environment_lookups(
                ks_loading.load_session_from_conf_options(self.conf, self._GROUP))
        return self._session

    def _conf_auth(self):
        """The group's own credentials, for contexts that carry no token."""
        if self._admin_auth is None:
            self._admin_auth = ks_loading.load_auth_from_conf_options(self.conf, self._GROUP)
        return self._admin_auth


# What requests reads from the process environment on *every* request when
# ``trust_env`` is on: proxies (``*_proxy``), a netrc file, CA bundles.
_CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
_NETRC_FILES = ("~/.netrc", "~/_netrc")


def uses_proxies_or_netrc(environ=None) -> bool:
    """True when the environment sets a proxy or requests would find a netrc file."""
    environ = os.environ if environ is None else environ
    if any(key.lower().endswith("_proxy") and value for key, value in environ.items()):
        return True
    if "NETRC" in environ:
        return True
    return any(os.path.exists(os.path.expanduser(name)) for name in _NETRC_FILES)


def without_environment_lookups(session, environ=None):
    """``session`` with requests' per-request environment lookups done once, here.

    Why: with ``trust_env`` requests walks the whole environment twice per
    request looking for proxies (and looks for a netrc file): about a third
    of the client CPU of each Cinder request in an attach storm. The
    environment of a running service does not change, so when it sets no
    proxy and there is no netrc the lookups are switched off, and the one
    thing left that requests took from it, a CA bundle
    (``REQUESTS_CA_BUNDLE``, else ``CURL_CA_BUNDLE``) replacing the default
    verification, is set on the session instead. With a proxy or netrc
    nothing changes.
    """
    environ = os.environ if environ is None else environ
    if uses_proxies_or_netrc(environ):
        return session
    bundle = next((environ[name] for name in _CA_BUNDLE_VARIABLES if environ.get(name)), None)
    if bundle and session.verify is True:
        session.verify = bundle
    session.session.trust_env = False
    return session
