"""Paste filter (all-in-one without Keystone): keep the noauth token on Cinder's context.

Why: Cinder's noauth middleware makes a context from the ``user:project``
token but drops the token itself, so castellan has nothing to send to the
key manager and every encrypted volume create fails ("No valid
authentication is available"). Placed right after ``noauth``, this puts
the token back on the context; the key manager's own noauth filter reads
the project from it.
"""


class KeepNoAuthToken:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        context = environ.get("cinder.context")
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if context is not None and token and not context.auth_token:
            context.auth_token = token
        return self.app(environ, start_response)


def filter_factory(global_conf, **local_conf):
    return KeepNoAuthToken
