"""Authentication: noauth2 and keystone, both ending in a RequestContext.

Both strategies only *describe* the caller in the WSGI environ
(``ENV_CONTEXT``); the app's view wrapper (``app._make_view``) reads it and
answers 401 itself, so a 401 has the same fault body and version headers as
every other error.
keystonemiddleware therefore runs with ``delay_auth_decision``: it marks a bad
token ``X-Identity-Status: Invalid`` and, on our 401, adds its
``WWW-Authenticate`` header so clients can find keystone.
"""

import json

from keystonemiddleware import auth_token

from volumesvc import context as vs_context
from volumesvc.api import policy

ENV_CONTEXT = "volumesvc.context"


class NoAuth2:
    """Nova's noauth2: ``X-Auth-Token: <user>:<project>`` is the caller.

    User ``admin`` gets roles admin, member and reader; anyone else gets
    member and reader; whether that makes an admin is the policy's
    ``context_is_admin``. No token leaves the request anonymous (401
    later). Only for tests and single-machine development setups.
    """

    def __init__(self, application, enforcer):
        self.application, self.enforcer = application, enforcer

    def __call__(self, environ, start_response):
        token = environ.get("HTTP_X_AUTH_TOKEN", "").strip()
        if token:
            user_id, _, project_id = token.partition(":")
            project_id = project_id or user_id
            roles = (["admin", "member", "reader"] if user_id == "admin"
                     else ["member", "reader"])
            ctx = vs_context.RequestContext(
                user_id=user_id, project_id=project_id, roles=roles,
                request_id=environ.get("openstack.request_id"),
                global_request_id=environ.get("openstack.global_request_id"))
            ctx.is_admin = policy.is_admin(self.enforcer, ctx)
            environ[ENV_CONTEXT] = ctx
        return self.application(environ, start_response)


class KeystoneContext:
    """Build the RequestContext from the headers auth_token set."""

    def __init__(self, application, enforcer):
        self.application, self.enforcer = application, enforcer

    def __call__(self, environ, start_response):
        if environ.get("HTTP_X_IDENTITY_STATUS") == "Confirmed":
            ctx = vs_context.RequestContext.from_environ(environ)
            ctx.is_admin = policy.is_admin(self.enforcer, ctx)
            catalog = environ.get("HTTP_X_SERVICE_CATALOG")
            if catalog:
                ctx.service_catalog = json.loads(catalog)
            environ[ENV_CONTEXT] = ctx
        return self.application(environ, start_response)


def wrap(application, conf, enforcer):
    """Wrap ``application`` with the configured ``[api] auth_strategy``.

    ``enforcer`` decides admin-ness (``context_is_admin``) for the context.
    """
    if conf.api.auth_strategy == "noauth2":
        return NoAuth2(application, enforcer)
    inner = KeystoneContext(application, enforcer)
    return auth_token.AuthProtocol(inner, {"oslo_config_config": conf,
                                           "delay_auth_decision": True})
