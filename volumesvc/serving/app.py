"""The API's WSGI application: the REST API inside its ordered middleware.

``create_app(conf, deps=...)`` builds the Flask app of ``volumesvc/api/``
(``create_api``) and wraps it in the middleware ``[wsgi] middleware`` lists,
from ``MIDDLEWARE`` or an operator's ``module:factory``;
:func:`init_application` is what a WSGI server calls (config from
:mod:`volumesvc.serving.bootstrap` unless given).
"""

import importlib
import ipaddress
import logging
import os
import re

import flask
from oslo_middleware import cors, http_proxy_to_wsgi, request_id

from volumesvc.api import app as api_app
from volumesvc.api import auth, routes
from volumesvc.common import profiler
from volumesvc.serving import health, metrics, requestlog

LOG = logging.getLogger(__name__)


class _RequestId(request_id.RequestId):
    """oslo.middleware's request id plus Nova's legacy x-compute-request-id."""

    compat_headers = ["x-compute-request-id"]


class _MiddlewareOnlyOnV2Paths:
    """Send the API's paths (``routes.is_api_path``) through ``wrapped``, others to ``plain``.

    ``GET /`` and the 300 choices carry no request id and need no token.
    """

    def __init__(self, wrapped, plain):
        self.wrapped, self.plain = wrapped, plain

    def __call__(self, environ, start_response):
        target = self.wrapped if routes.is_api_path(environ.get("PATH_INFO", "")) else self.plain
        return target(environ, start_response)


def trusted_proxy_networks(conf) -> tuple:
    """``[wsgi] trusted_proxies`` as networks; none while proxy-header parsing is off.

    The one answer to "whose forwarded headers count", for gunicorn's
    ``forwarded_allow_ips`` (``server.gunicorn_settings``) and for
    oslo.middleware's parsing (``_ProxyHeadersFromTrustedPeers``): gunicorn
    on its own trusts loopback, which would let any local client turn links
    into https with parsing off.
    """
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        return ()
    try:
        return tuple(ipaddress.ip_network(entry) for entry in conf.wsgi.trusted_proxies)
    except ValueError as exc:
        raise ValueError(f"[wsgi] trusted_proxies: {exc}") from None


class _ProxyHeadersFromTrustedPeers:
    """oslo.middleware's HTTPProxyToWSGI, for requests from a trusted proxy only.

    HTTPProxyToWSGI believes any sender once parsing is on; the peer address
    (``REMOTE_ADDR``, the connection's, never a header) must be in
    ``trusted_proxy_networks`` as well.
    """

    def __init__(self, app, conf):
        self.plain = app
        self.parsing = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
        self.networks = trusted_proxy_networks(conf)
        if conf.oslo_middleware.enable_proxy_headers_parsing and not self.networks:
            LOG.warning("[oslo_middleware] enable_proxy_headers_parsing is on but "
                        "[wsgi] trusted_proxies is empty: forwarded headers are ignored")

    def _trusted(self, environ) -> bool:
        try:
            peer = ipaddress.ip_address(environ.get("REMOTE_ADDR", ""))
        except ValueError:
            return False
        return any(peer in network for network in self.networks)

    def __call__(self, environ, start_response):
        target = self.parsing if self._trusted(environ) else self.plain
        return target(environ, start_response)


# NOTE: every middleware [wsgi] middleware can name, in its default order
# (outermost first); each entry is (name, scope, factory(app, conf, owner)),
# owner being the API's Flask app (api/app.py: its metrics, its enforcer).
# cors answers a browser's preflight before anything asks for a token;
# http_proxy_to_wsgi must see the request before anything builds a URL;
# healthcheck answers /healthcheck before any token is looked at (a load
# balancer's probe needs none) and outside requestlog (probes every few
# seconds would drown the request lines), and so is the metrics scrape;
# request_id runs before auth so a 401 carries the request id; auth only
# describes the caller (the app itself answers 401). Scope "v2" entries wrap
# only /v2, /v2.1 and the paths below them (see ``routes.is_api_path``).
MIDDLEWARE = (
    ("cors", "all", lambda app, conf, owner: cors.CORS(app, conf)),
    ("http_proxy_to_wsgi", "all",
     lambda app, conf, owner: _ProxyHeadersFromTrustedPeers(app, conf)),
    ("healthcheck", "all", lambda app, conf, owner: health.wrap(
        app, conf, owner.extensions["volumesvc"].enforcer)),
    ("metrics", "all", lambda app, conf, owner: metrics.wrap(
        app, owner.metrics, conf, owner.extensions["volumesvc"].enforcer)),
    ("requestlog", "all", lambda app, conf, owner: requestlog.RequestLog(
        app, requestlog.observers(owner.metrics))),
    ("request_id", "v2", lambda app, conf, owner: _RequestId(app, conf)),
    ("profiler", "v2", lambda app, conf, owner: profiler.wrap(app, conf)),
    ("auth", "v2", lambda app, conf, owner: auth.wrap(
        app, conf, owner.extensions["volumesvc"].enforcer)),
)


# An operator's own entry: ``package.module:factory``, the factory possibly an
# attribute of an attribute (``module:Class.factory``).
_OPERATOR_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def _operator_factory(entry: str):
    """The filter factory ``entry`` (``module:factory``) names, imported now.

    Resolved while the API starts, so a typo or a missing package stops it
    with the entry's name instead of a traceback at the first request.
    """
    module_name, _, attribute = entry.partition(":")
    try:
        target = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"[wsgi] middleware: {entry}: cannot import {module_name}: "
                         f"{exc}") from None
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"[wsgi] middleware: {entry}: {module_name} has no "
                             f"{attribute}") from None
    if not callable(target):
        raise ValueError(f"[wsgi] middleware: {entry}: {attribute} is not callable")
    return target


def _operator_options(conf, entries) -> dict:
    """``[wsgi] middleware_options`` as {entry: {key: value}}, for listed entries only.

    A line for an entry the pipeline does not have is a typo in one of the
    two options; starting anyway would run the middleware without it.
    """
    options: dict = {entry: {} for entry in entries}
    for line in conf.wsgi.middleware_options:
        entry, _, setting = line.strip().partition(" ")
        key, sep, value = setting.strip().partition("=")
        if entry not in options:
            raise ValueError(f"[wsgi] middleware_options: {entry!r} is not a "
                             f"package.module:factory entry of [wsgi] middleware")
        if not sep or not key.strip():
            raise ValueError(f"[wsgi] middleware_options: {line!r} is not "
                             f"'<entry> <key>=<value>'")
        options[entry][key.strip()] = value.strip()
    return options


def _operator_middleware(entry: str, factory, options: dict):
    """A MIDDLEWARE-style factory calling a paste filter factory the way paste does.

    paste calls ``factory(global_conf, **local_conf)`` once and the filter it
    returns with the app; OpenStack's middleware (keystonemiddleware's audit,
    oslo.middleware's ``Class.factory``) ships such factories. There is no
    paste file: global_conf names the service's config file, local_conf is
    the entry's ``[wsgi] middleware_options`` plus ``oslo_config_config``,
    this ConfigOpts, from which those middleware read their own option
    groups in volumesvc.conf.
    """
    def build(app, conf, owner):
        files = list(conf.config_file or ())
        global_conf = ({"__file__": files[-1], "here": os.path.dirname(files[-1])}
                       if files else {})
        try:
            make_filter = factory(global_conf, **options, oslo_config_config=conf)
            if not callable(make_filter):
                raise TypeError(f"it returned {type(make_filter).__name__}, not a filter")
            return make_filter(app)
        except Exception as exc:
            raise ValueError(f"[wsgi] middleware: {entry}: {exc}") from exc
    return build


def pipeline(conf) -> list:
    """``[wsgi] middleware`` as MIDDLEWARE entries, outermost first.

    An entry ``module:factory`` is an operator's own middleware, imported
    here; its scope is "v2" when it is listed after one of the built-in "v2"
    entries (it then sees the caller, inside ``auth`` when listed after it),
    "all" otherwise.

    Raises ValueError for an unknown, unimportable or repeated entry, for
    ``[wsgi] middleware_options`` naming no such entry, and for
    a pipeline without ``auth`` (every request would be anonymous, so every
    /v2.1 route a 401: a configuration mistake, never a deployment).
    """
    known = {entry[0]: entry for entry in MIDDLEWARE}
    names = list(conf.wsgi.middleware)
    unknown = [name for name in names
               if name not in known and not _OPERATOR_ENTRY.match(name)]
    if unknown:
        raise ValueError(f"[wsgi] middleware: unknown {', '.join(unknown)} "
                         f"(known: {', '.join(known)}, or package.module:factory)")
    if len(set(names)) != len(names):
        raise ValueError("[wsgi] middleware: an entry is listed twice")
    if "auth" not in names:
        raise ValueError("[wsgi] middleware: auth is required")
    options = _operator_options(conf, [name for name in names if name not in known])
    entries, scope = [], "all"
    for name in names:
        if name in known:
            entries.append(known[name])
            if known[name][1] == "v2":
                scope = "v2"
        else:
            entries.append((name, scope, _operator_middleware(
                name, _operator_factory(name), options[name])))
    return entries


def _wrap_middleware(flask_app, conf):
    wsgi = flask_app.wsgi_app
    entries = pipeline(conf)
    v2_app = wsgi
    for _name, _scope, factory in reversed([m for m in entries if m[1] == "v2"]):
        v2_app = factory(v2_app, conf, flask_app)
    outer = _MiddlewareOnlyOnV2Paths(v2_app, wsgi)
    for _name, _scope, factory in reversed([m for m in entries if m[1] == "all"]):
        outer = factory(outer, conf, flask_app)
    return outer


def create_app(conf, *, deps=None) -> flask.Flask:
    """Build the API WSGI app for ``conf``; ``deps`` lets tests inject fakes.

    Returns the Flask app; calling it runs the middleware around Flask, so
    the app object itself is what servers and test clients call.
    """
    app = api_app.create_api(conf, deps=deps)
    if conf.metrics.enabled:
        app.metrics = metrics.Metrics(conf)
    app.middleware = _wrap_middleware(app, conf)
    return app


def init_application(conf=None) -> flask.Flask:
    """Return the API WSGI application (build config first unless given)."""
    from volumesvc.serving import bootstrap

    return create_app(conf if conf is not None else bootstrap.load_conf())
