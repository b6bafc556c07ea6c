"""Paste filter (all-in-one without Keystone): the noauth ``user:project`` token names the caller.

Why: Barbican's unauthenticated pipeline takes the caller's project from an
``X-Project-Id`` header, which neither castellan nor barbicanclient sends.
Without Keystone, Cinder and volumesvc authenticate as ``user:project``
tokens (their noauth); this turns that token into the headers Barbican's
unauthenticated context reads, so a secret belongs to the project that
created it and another project still cannot read it. The roles are the
ones volumesvc's noauth2 gives. A request that
already names its project is left as it is.

It also gives the request the ``request_id`` attribute Barbican 23's
unauthenticated context reads from it (``req.request_id``) but nothing in
that pipeline sets: without it every request fails with a 500. The value
is the one oslo.middleware's request_id filter, earlier in the pipeline,
made.
"""


class NoAuthToken:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        token = environ.pop("HTTP_X_AUTH_TOKEN", "").strip()
        if token and not environ.get("HTTP_X_PROJECT_ID"):
            user_id, _, project_id = token.partition(":")
            environ["HTTP_X_USER_ID"] = user_id
            environ["HTTP_X_PROJECT_ID"] = project_id or user_id
            # Roles as volumesvc's noauth2 gives them: Barbican's policy wants
            # member (or reader) for a project's secrets, admin is not enough.
            environ["HTTP_X_ROLES"] = ("admin,member,reader" if user_id == "admin"
                                       else "member,reader")
        environ.setdefault("webob.adhoc_attrs", {}).setdefault(
            "request_id", environ.get("openstack.request_id"))
        return self.app(environ, start_response)


def filter_factory(global_conf, **local_conf):
    return NoAuthToken
