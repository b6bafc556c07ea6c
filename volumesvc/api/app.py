"""The REST API as a Flask application (no import-time side effects).

``create_api(conf, deps=...)`` builds the app from the routing table, one
view wrapper around every handler (microversion, auth, validation, policy
guard, JSON) and one error handler for every exception. The WSGI middleware
around it (authentication, request id, health, metrics, request log) is the
serving package's (``volumesvc/serving/app.py``).
"""

import logging
import re
from collections.abc import Callable
from typing import Any

import flask
import werkzeug.exceptions

from volumesvc import logsafe
from volumesvc.api import auth, errors, jsonbody, routes, validation, versioned
from volumesvc.api import deps as deps_mod
from volumesvc.api import microversions as mv
from volumesvc.api import policy as policy_mod
from volumesvc.api.handlers import versions
from volumesvc.api.request import ApiRequest

LOG = logging.getLogger(__name__)

_PROJECT_ID = re.compile(r"^[0-9a-fA-F-]+$")
_JSON_METHODS = ("POST", "PUT", "PATCH")


# What the app leaves in the WSGI environ for the middleware around it
# (volumesvc/serving/requestlog.py): the route template of the URL rule that
# matched, and the negotiated microversion.
ENV_ROUTE = "volumesvc.route"
ENV_MICROVERSION = "volumesvc.microversion"


class _App(flask.Flask):
    """A Flask app whose WSGI entry runs ``middleware`` (wrapping ``wsgi_app``).

    Flask suggests replacing ``app.wsgi_app``; overriding ``__call__`` does
    the same without assigning over a method. ``volumesvc.serving.app`` sets
    ``middleware`` (the WSGI pipeline) and ``metrics``; without them the app
    is the bare REST API.
    """

    middleware: Callable[..., Any] | None = None
    # The app's Prometheus metrics ([metrics] enabled), else None; gunicorn
    # workers find them here (serving/gunicorn_workers.py).
    metrics: Any = None

    def __call__(self, environ, start_response):
        if self.middleware is None:
            return self.wsgi_app(environ, start_response)
        return self.middleware(environ, start_response)


def _parses_microversion(path: str) -> bool:
    return path == routes.API_PREFIX or path.startswith(routes.API_PREFIX + "/")


def _before_request():
    """Negotiate the microversion for /v2.1 (contract §1.2); 400 and 406 happen here."""
    g = flask.g
    path = flask.request.path
    rule = flask.request.url_rule
    if rule is not None:
        flask.request.environ[ENV_ROUTE] = routes.route_template(rule.rule)
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
    flask.request.environ[ENV_MICROVERSION] = str(g.microversion)


def _after_request(response):
    version = flask.g.get("echo_version")
    if version is not None:
        for name, value in mv.response_headers(version):
            response.headers.add(name, value)
    return response


def _handle_error(exc):
    """The single error handler: every failure becomes a Nova fault body."""
    path = flask.request.path
    if isinstance(exc, werkzeug.exceptions.NotFound) and not routes.is_api_path(path):
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


def create_api(conf, *, deps=None) -> _App:
    """Build the REST API's Flask app for ``conf``; ``deps`` lets tests inject fakes.

    The bare API: no authentication, request id or other middleware, so its
    /v2.1 routes answer 401. What a server runs is
    ``volumesvc.serving.app.create_app``, which puts the middleware around it.
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

    for path, methods in routes.ROUTES.items():
        for rule in filter(None, (path, routes.project_scoped(path))):
            for method, handler in methods.items():
                endpoint = f"{method} {rule}"
                app.add_url_rule(rule, endpoint=endpoint, view_func=_make_view(handler, method),
                                 methods=[method], provide_automatic_options=False)

    app.before_request(_before_request)
    app.after_request(_after_request)
    app.register_error_handler(Exception, _handle_error)
    return app
