"""The Flask application factory (no import-time side effects).

``create_app(conf, deps=...)`` builds the app from the routing table, one
view wrapper around every handler (microversion, auth, validation, policy
guard, JSON), one error handler for every exception, and the WSGI middleware
listed in ``MIDDLEWARE``.
"""

import ipaddress
import logging
import re
from collections.abc import Callable
from typing import Any

import flask
import werkzeug.exceptions
from oslo_middleware import cors, http_proxy_to_wsgi, request_id

from volumesvc import logsafe
from volumesvc.api import (
    auth,
    errors,
    health,
    jsonbody,
    requestlog,
    routes,
    validation,
    versioned,
)
from volumesvc.api import deps as deps_mod
from volumesvc.api import metrics as metrics_mod
from volumesvc.api import microversions as mv
from volumesvc.api import policy as policy_mod
from volumesvc.api.handlers import versions
from volumesvc.api.request import ApiRequest
from volumesvc.common import profiler

LOG = logging.getLogger(__name__)

_PROJECT_ID = re.compile(r"^[0-9a-fA-F-]+$")
_JSON_METHODS = ("POST", "PUT", "PATCH")


class _RequestId(request_id.RequestId):
    """oslo.middleware's request id plus Nova's legacy x-compute-request-id."""

    compat_headers = ["x-compute-request-id"]


_VERSION_ROOTS = ("/v2", routes.API_PREFIX)


def _is_api_path(path: str) -> bool:
    """``/v2``, ``/v2.1`` and the paths below them, not ``/v2foo``."""
    return any(path == root or path.startswith(root + "/") for root in _VERSION_ROOTS)


class _MiddlewareOnlyOnV2Paths:
    """Send the API's paths (``_is_api_path``) through ``wrapped``, others to ``plain``.

    ``GET /`` and the 300 choices carry no request id and need no token.
    """

    def __init__(self, wrapped, plain):
        self.wrapped, self.plain = wrapped, plain

    def __call__(self, environ, start_response):
        target = self.wrapped if _is_api_path(environ.get("PATH_INFO", "")) else self.plain
        return target(environ, start_response)


def trusted_proxy_networks(conf) -> tuple:
    """``[api] trusted_proxies`` as networks; none while proxy-header parsing is off.

    The one answer to "whose forwarded headers count", for gunicorn's
    ``forwarded_allow_ips`` (``wsgi.gunicorn_settings``) and for
    oslo.middleware's parsing (``_ProxyHeadersFromTrustedPeers``): gunicorn
    on its own trusts loopback, which would let any local client turn links
    into https with parsing off.
    """
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        return ()
    try:
        return tuple(ipaddress.ip_network(entry) for entry in conf.api.trusted_proxies)
    except ValueError as exc:
        raise ValueError(f"[api] trusted_proxies: {exc}") from None


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
                        "[api] trusted_proxies is empty: forwarded headers are ignored")

    def _trusted(self, environ) -> bool:
        try:
            peer = ipaddress.ip_address(environ.get("REMOTE_ADDR", ""))
        except ValueError:
            return False
        return any(peer in network for network in self.networks)

    def __call__(self, environ, start_response):
        target = self.parsing if self._trusted(environ) else self.plain
        return target(environ, start_response)


# NOTE: every middleware [api] middleware can name, in its default order
# (outermost first); each entry is (name, scope, factory(app, conf, owner)),
# owner being the _App (its metrics, its enforcer).
# cors answers a browser's preflight before anything asks for a token;
# http_proxy_to_wsgi must see the request before anything builds a URL;
# healthcheck answers /healthcheck before any token is looked at (a load
# balancer's probe needs none) and outside requestlog (probes every few
# seconds would drown the request lines), and so is the metrics scrape;
# request_id runs before auth so a 401 carries the request id; auth only
# describes the caller (the app itself answers 401). Scope "v2" entries wrap
# only /v2, /v2.1 and the paths below them (see _is_api_path).
MIDDLEWARE = (
    ("cors", "all", lambda app, conf, owner: cors.CORS(app, conf)),
    ("http_proxy_to_wsgi", "all",
     lambda app, conf, owner: _ProxyHeadersFromTrustedPeers(app, conf)),
    ("healthcheck", "all", lambda app, conf, owner: health.wrap(
        app, conf, owner.extensions["volumesvc"].enforcer)),
    ("metrics", "all", lambda app, conf, owner: metrics_mod.wrap(
        app, owner.metrics, conf, owner.extensions["volumesvc"].enforcer)),
    ("requestlog", "all", lambda app, conf, owner: requestlog.RequestLog(
        app, requestlog.observers(owner.metrics))),
    ("request_id", "v2", lambda app, conf, owner: _RequestId(app, conf)),
    ("profiler", "v2", lambda app, conf, owner: profiler.wrap(app, conf)),
    ("auth", "v2", lambda app, conf, owner: auth.wrap(
        app, conf, owner.extensions["volumesvc"].enforcer)),
)


class _App(flask.Flask):
    """A Flask app whose WSGI entry runs ``middleware`` (wrapping ``wsgi_app``).

    Flask suggests replacing ``app.wsgi_app``; overriding ``__call__`` does
    the same without assigning over a method.
    """

    middleware: Callable[..., Any]
    # The app's Prometheus metrics ([metrics] enabled), else None; gunicorn
    # workers find them here (api/gunicorn_workers.py).
    metrics: metrics_mod.Metrics | None = None

    def __call__(self, environ, start_response):
        return self.middleware(environ, start_response)


def pipeline(conf) -> list:
    """``[api] middleware`` as MIDDLEWARE entries, outermost first.

    Raises ValueError for an unknown or repeated entry and for a pipeline
    without ``auth`` (every request would be anonymous, so every /v2.1 route
    a 401: a configuration mistake, never a deployment).
    """
    known = {entry[0]: entry for entry in MIDDLEWARE}
    names = list(conf.api.middleware)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"[api] middleware: unknown {', '.join(unknown)} "
                         f"(known: {', '.join(known)})")
    if len(set(names)) != len(names):
        raise ValueError("[api] middleware: an entry is listed twice")
    if "auth" not in names:
        raise ValueError("[api] middleware: auth is required")
    return [known[name] for name in names]


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


def _parses_microversion(path: str) -> bool:
    return path == routes.API_PREFIX or path.startswith(routes.API_PREFIX + "/")


def _before_request():
    """Negotiate the microversion for /v2.1 (contract §1.2); 400 and 406 happen here."""
    g = flask.g
    path = flask.request.path
    rule = flask.request.url_rule
    if rule is not None:
        requestlog.note_route(flask.request.environ, rule.rule)
    if not _parses_microversion(path):
        return
    try:
        g.microversion = mv.negotiate(flask.request.headers)
    except mv.InvalidVersion as exc:
        raise errors.APIError(
            400, f"API Version String {exc} is of invalid format. Must be of format "
            "MajorNum.MinorNum.", errors.VERSION_INVALID) from exc
    except mv.UnsupportedVersion as exc:
        g.echo_version = exc.version
        raise errors.APIError(
            406, f"Version {exc.version} is not supported by the API. Minimum is "
            f"{mv.MIN_VERSION} and maximum is {mv.MAX_VERSION}.",
            errors.VERSION_UNSUPPORTED) from exc
    g.echo_version = g.microversion
    requestlog.note_microversion(flask.request.environ, g.microversion)


def _after_request(response):
    version = flask.g.get("echo_version")
    if version is not None:
        for name, value in mv.response_headers(version):
            response.headers.add(name, value)
    return response


def _handle_error(exc):
    """The single error handler: every failure becomes a Nova fault body."""
    path = flask.request.path
    if isinstance(exc, werkzeug.exceptions.NotFound) and not _is_api_path(path):
        conf = flask.current_app.extensions["volumesvc"].conf
        return flask.jsonify(versions.choices(conf, path)), 300
    if isinstance(exc, versioned.VersionNotAvailable):
        if exc.status_code == 405:
            # The method does not exist at this version; the others still do.
            rule = flask.request.url_rule
            methods = set(rule.methods or ()) if rule is not None else set()
            allowed = sorted(methods - {"HEAD", "OPTIONS", flask.request.method})
            exc = errors.APIError(405, "The method is not allowed for the requested URL.",
                                  errors.METHOD_NOT_ALLOWED,
                                  [("Allow", ", ".join(allowed))])
        else:
            exc = errors.APIError(404, "The resource could not be found.",
                                  errors.ROUTE_NOT_FOUND)
    error = errors.to_api_error(exc)
    # NOTE: the path is the client's (a decoded %0a would start a new line).
    where = logsafe.escape(f"{flask.request.method} {path}")
    if error.status >= 500:
        LOG.error("%s failed: %s", where, logsafe.escape(error.message))
    else:
        LOG.info("%s refused: %d %s", where, error.status, error.code)
    response = flask.jsonify(errors.fault_body(error.status, error.message))
    response.status_code = error.status
    response.headers[errors.ERROR_CODE_HEADER] = error.code
    for name, value in error.headers:
        response.headers[name] = value
    return response


def _read_body(method):
    if method not in _JSON_METHODS:
        return None
    raw = flask.request.get_data(cache=True)
    if not raw:
        return None
    try:
        return jsonbody.parse(raw)
    except jsonbody.BadBody as exc:
        raise errors.APIError(400, f"Malformed request body: {exc}",
                              errors.MALFORMED_JSON) from None


def _context_or_401(handler):
    ctx = flask.request.environ.get(auth.ENV_CONTEXT)
    if ctx is None and not getattr(handler, "_policy_exempt", False):
        raise errors.APIError(401, "The request you have made requires authentication.",
                              errors.AUTH_MISSING)
    return ctx


def _make_view(handler, method):
    """Wrap one handler: the fixed opening every request goes through."""

    def view(**url_args):
        app_deps = flask.current_app.extensions["volumesvc"]
        ctx = _context_or_401(handler)
        project_id = url_args.pop("project_id", None)
        if project_id is not None:
            if not _PROJECT_ID.match(project_id):
                raise errors.APIError(404, "The resource could not be found.",
                                      errors.ROUTE_NOT_FOUND)
            if ctx is not None and ctx.project_id != project_id:
                raise errors.APIError(
                    400, f"Malformed request URL: URL's project_id '{project_id}' doesn't "
                    f"match Context's project_id '{ctx.project_id}'", errors.BAD_REQUEST)
        version = flask.g.get("microversion", mv.MIN_VERSION)
        body = validation.validate_body(handler, version, _read_body(method))
        query = validation.validate_query(handler, version,
                                          flask.request.args.to_dict(flat=False))
        flask.g.policy_enforced = False
        req = ApiRequest(context=ctx, version=version, body=body, query=query,
                         deps=app_deps, project_id=project_id)
        result, status = handler(req, **url_args)
        if not flask.g.policy_enforced and not getattr(handler, "_policy_exempt", False):
            # keystone's _assert_rbac_enforcement_called: never answer
            # successfully from a handler that checked no policy.
            raise RuntimeError(f"{handler.__qualname__} did not enforce a policy")
        validation.validate_response(handler, version, result,
                                     app_deps.conf.api.response_validation)
        if result is None:
            return flask.Response(status=status)
        return flask.jsonify(result), status

    # The contract tests find each route's handler here.
    view.__dict__["handler"] = handler
    return view


def create_app(conf, *, deps=None) -> flask.Flask:
    """Build the API WSGI app for ``conf``; ``deps`` lets tests inject fakes.

    Returns the Flask app; calling it runs the middleware around Flask, so
    the app object itself is what servers and gabbi call.
    """
    app = _App("volumesvc.api", static_folder=None)
    app.url_map.strict_slashes = False
    json_provider = flask.json.provider.DefaultJSONProvider(app)
    json_provider.sort_keys = False
    app.json = json_provider
    # A body above this is refused (413 overLimit) before it is read whole.
    app.config["MAX_CONTENT_LENGTH"] = conf.oslo_middleware.max_request_body_size
    deps = deps or deps_mod.Deps(conf)
    if deps.enforcer is None:
        deps.enforcer = policy_mod.make_enforcer(conf)
    app.extensions["volumesvc"] = deps
    if conf.metrics.enabled:
        app.metrics = metrics_mod.Metrics(conf)

    for path, methods in routes.ROUTES.items():
        for rule in filter(None, (path, routes.project_scoped(path))):
            for method, handler in methods.items():
                endpoint = f"{method} {rule}"
                app.add_url_rule(rule, endpoint=endpoint, view_func=_make_view(handler, method),
                                 methods=[method], provide_automatic_options=False)

    app.before_request(_before_request)
    app.after_request(_after_request)
    app.register_error_handler(Exception, _handle_error)
    app.middleware = _wrap_middleware(app, conf)
    return app
