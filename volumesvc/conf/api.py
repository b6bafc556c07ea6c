"""Options in [api]: the REST API (auth, validation, links, limits).

The options of the server around it (socket, TLS, workers, threads,
timeouts, middleware, trusted proxies, the health probe) are [wsgi]'s
(``conf/wsgi.py``).
"""

import copy

from keystonemiddleware.auth_token import _opts as auth_token_opts
from oslo_config import cfg
from oslo_middleware import cors, http_proxy_to_wsgi, sizelimit

api_group = cfg.OptGroup(
    "api",
    title="API options",
    help="Options of the volumesvc-api process (the Compute REST API).")

api_opts = [
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[("keystone", "keystonemiddleware auth_token validates tokens"),
                 ("noauth2", "trust 'X-Auth-Token: <user>:<project>'; testing only")],
        help="""
How API requests are authenticated.

Possible values:

* ``keystone``: tokens are validated by keystonemiddleware (``[keystone_authtoken]``).
* ``noauth2``: the token is ``<user>:<project>``; user ``admin`` is an admin.
  Never use it outside tests and single-machine development setups.
"""),
    cfg.StrOpt(
        "response_validation",
        default="warn",
        choices=[("error", "a response that breaks its schema becomes a 500"),
                 ("warn", "log a warning and send the response anyway"),
                 ("ignore", "do not check responses")],
        help="""
What to do when a response body does not match its declared JSON schema.

Possible values:

* ``error``: answer 500 instead (what the test suites use).
* ``warn``: log and send the response (production default).
* ``ignore``: skip the check entirely.
"""),
    cfg.BoolOpt(
        "enable_instance_password",
        default=True,
        help="Return the generated admin password in server create and rebuild responses."),
    cfg.StrOpt(
        "dhcp_domain",
        default="novalocal",
        help="""
Domain appended to a server's hostname in the ``hostname`` its config drive
gives the guest (``web-1`` becomes ``web-1.novalocal``), as Nova does. Empty:
the hostname as the server has it (for 2.94's fully qualified hostnames).
Read by the computes when they write a config drive.
"""),
    cfg.IntOpt(
        "max_limit",
        default=1000,
        min=0,
        help="Maximum number of items a collection resource returns in one page."),
    cfg.IntOpt(
        "failed_attachment_ttl",
        default=3600,
        min=0,
        help="""
Seconds a failed volume attach stays listed (``status`` ``error`` with its
``fault``) in ``os-volume_attachments`` from microversion 2.106, unless the
client deletes it first. 0 never lists failed attaches. Below 2.106 a failed
attach is never listed.
"""),
    cfg.StrOpt(
        "compute_link_prefix",
        help="""
Base URL that replaces scheme, host and port in compute links of API
responses; unset means the request's own (``X-Forwarded-*`` aware) URL.

Related options:

* ``glance_link_prefix``
"""),
    cfg.StrOpt(
        "glance_link_prefix",
        help="Base URL that replaces scheme, host and port in image links; unset means as-is."),
    cfg.IntOpt(
        "max_servers_per_request",
        default=100,
        min=1,
        help="""
Most servers one ``POST /servers`` may create (``min_count``/``max_count``).

A bound independent of the instances quota (``[quota] instances``, which
may be unlimited): without it one request with a huge ``min_count`` would
make the API build that many records in memory. As Nova does with its
instance quota, a larger ``max_count`` is lowered to this value and a
larger ``min_count`` is refused with 403.
"""),
]


CORS_ALLOW_HEADERS = ["X-Auth-Token", "X-OpenStack-Request-ID", "X-Identity-Status",
                      "X-Roles", "X-Service-Catalog", "X-User-Id", "X-Tenant-Id",
                      "X-OpenStack-Nova-API-Version", "OpenStack-API-Version"]
CORS_EXPOSE_HEADERS = ["X-Auth-Token", "X-OpenStack-Request-ID", "X-Subject-Token",
                       "X-Service-Token", "X-OpenStack-Nova-API-Version",
                       "OpenStack-API-Version"]


def register_opts(conf):
    # NOTE: a fresh OptGroup per ConfigOpts: register_group only shallow-copies,
    # so a shared group would leak set_override between "fresh" configs.
    conf.register_group(copy.deepcopy(api_group))
    conf.register_opts(api_opts, group=api_group)
    conf.register_opts(http_proxy_to_wsgi.OPTS, group="oslo_middleware")
    # NOTE: the body limit is oslo.middleware's option, enforced by Flask
    # (MAX_CONTENT_LENGTH) so that a 413 gets a Nova fault body, not webob's.
    conf.register_opts(sizelimit.OPTS, group="oslo_middleware")
    # CORS is oslo.middleware's, with the headers a browser client of the
    # Compute API must send and read (tokens, microversions, request ids).
    conf.register_opts(cors.CORS_OPTS, group="cors")
    conf.set_default("allow_headers", CORS_ALLOW_HEADERS, group="cors")
    conf.set_default("expose_headers", CORS_EXPOSE_HEADERS, group="cors")
    conf.set_default("allow_methods", ["GET", "PUT", "POST", "DELETE", "PATCH"],
                     group="cors")
    # NOTE: [oslo_middleware] enable_proxy_headers_parsing keeps its default
    # (off): any client can send X-Forwarded-*/Forwarded, and honouring them
    # would let it rewrite every link the API returns. Deployments behind a
    # proxy that sets (and strips client-sent) headers turn it on and name
    # the proxy in [wsgi] trusted_proxies.
    # [keystone_authtoken] is read by keystonemiddleware from this ConfigOpts
    # (``oslo_config_config``); registering it here makes it settable in
    # tests and visible to the sample generator.
    for group, options in auth_token_opts.list_opts():
        conf.register_opts(options, group=group)


def list_opts():
    return [(api_group, api_opts),
            ("oslo_middleware", http_proxy_to_wsgi.OPTS + sizelimit.OPTS),
            ("cors", cors.CORS_OPTS),
            *auth_token_opts.list_opts()]
