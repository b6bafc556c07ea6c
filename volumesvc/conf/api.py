"""Options in [api]: the REST API process (auth, validation, links, server)."""

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
    cfg.ListOpt(
        "trusted_proxies",
        default=[],
        help="""
Addresses (``192.0.2.10``) or networks (``192.0.2.0/24``) of the proxies in
front of volumesvc-api whose ``X-Forwarded-*`` and ``Forwarded`` headers
are honoured when ``[oslo_middleware] enable_proxy_headers_parsing`` is on.

Those headers set the scheme, host and prefix of every link the API
returns, and any client can send them: they are read only on connections
from these addresses, both by gunicorn (its ``forwarded_allow_ips``, which
otherwise trusts loopback) and by oslo.middleware. With parsing off they are
ignored from everyone, whatever this list says.

Used by ``volumesvc-api`` and by gunicorn run with
``--config python:volumesvc.api.gunicorn_conf`` (the systemd unit).

Related options:

* ``[oslo_middleware] enable_proxy_headers_parsing``
"""),
    cfg.StrOpt(
        "glance_link_prefix",
        help="Base URL that replaces scheme, host and port in image links; unset means as-is."),
    cfg.HostAddressOpt(
        "listen_host",
        default="0.0.0.0",
        help="""
Address the volumesvc-api server (gunicorn) binds to.

The default takes every address of the host, so that a load balancer or
clients on other hosts reach the API; the all-in-one binds 127.0.0.1.
"""),
    cfg.PortOpt(
        "listen_port",
        default=8774,
        help="TCP port the volumesvc-api server (gunicorn) listens on."),
    cfg.IntOpt(
        "workers",
        default=2,
        min=1,
        help="""
Number of gunicorn worker processes of volumesvc-api.

Related options:

* ``listen_host``, ``listen_port``, ``threads``
"""),
    cfg.IntOpt(
        "threads",
        default=8,
        min=1,
        help="""
Threads per volumesvc-api worker process for requests other than GET and
HEAD (gunicorn ``gthread`` workers; reads have ``read_threads`` of their
own).

A request that waits on Cinder (the synchronous checks of an attach) or on
the conductor (attach below microversion 2.101) holds one thread, not a whole
worker process. More threads let more such requests wait at once, but every
one of them that is running Python competes for its worker's interpreter
lock with the reads: with 4 workers and 100 concurrent attaches, a ``GET
/servers/{id}`` sent during the burst took p99 0.36 s with 32 threads and
0.14 s with 8 (at 2.101; at 2.100 0.43 s and 0.18 s), while the attaches
themselves took as long at 2.101 and longer at 2.100 (p99 10.8 s and 15.2 s),
where each waits for the conductor (benchmarks/README.md). Requests beyond
``workers`` × ``threads`` wait in the workers' queues; reads never wait
behind them.

A thread holds a database connection only while it runs a query, but at
most ``workers`` × (``threads`` + ``read_threads``) can be open at once:
keep that within the database's connection limit.

Possible values:

* 1: classic sync workers, one request per process at a time (no read
  threads).
* A larger number: that many non-read requests in flight per worker.

Related options:

* ``workers``, ``read_threads``
"""),
    cfg.IntOpt(
        "read_threads",
        default=8,
        min=0,
        help="""
Threads per volumesvc-api worker process that serve only GET and HEAD
requests (gunicorn ``gthread`` workers, i.e. ``threads`` above 1).

Without them every request waits in one queue per worker, first come first
served, and a read that arrives during a burst of attaches waits for all
the attaches queued before it, each of which waits on Cinder: with 4
workers of 32 threads, a ``GET /servers/{id}`` sent during 300 concurrent
attaches took up to 20 s (benchmarks/README.md). With a pool of their own,
reads wait only for other reads. The method is read from the first bytes of
the request without consuming them; a TLS connection terminated by
gunicorn itself cannot be read that way and always takes the ``threads``
pool (terminate TLS in front of the API, as usual).

Possible values:

* 0: one pool for every request (gunicorn's own behaviour).
* A positive number: that many threads for reads, on top of ``threads``.

Related options:

* ``threads``, ``workers``
"""),
    cfg.IntOpt(
        "max_requests",
        default=200,
        min=0,
        help="""
Requests after which a volumesvc-api worker process is replaced by a fresh
one (gunicorn ``max_requests``), 0 never.

The workers are forks of a master that loaded the application, so at first
they share its memory. Serving requests, in particular bursts that wake
many of a worker's threads at once, writes to those shared pages (Python
reference counts) and grows each worker's own heap, and that memory stays
after the burst. A worker that is replaced is a new fork of the master and
shares its pages again. The old worker stops taking connections, finishes
the requests it holds (up to ``graceful_timeout`` of gunicorn, 30 s), and
answers a request that arrives on one of its kept-alive connections with
``Connection: close``; no request is dropped. The new worker opens its own
database and message-queue connections on its first requests.

Used by ``volumesvc-api`` and by gunicorn run with
``--config python:volumesvc.api.gunicorn_conf`` (the systemd unit).

Possible values:

* 0: never replace workers.
* A positive number: replace a worker after about that many requests.

Related options:

* ``max_requests_jitter``
"""),
    cfg.IntOpt(
        "max_requests_jitter",
        default=50,
        min=0,
        help="""
Up to this many requests more, chosen at random per worker, before it is
replaced (gunicorn ``max_requests_jitter``), so that the workers of one
server are not all replaced at the same moment.

Related options:

* ``max_requests``
"""),
    cfg.IntOpt(
        "worker_private_memory_max",
        default=32,
        min=0,
        help="""
MiB of memory of its own (not shared with the master: private clean and
dirty pages) above which a volumesvc-api worker process is replaced by a
fresh one, 0 never.

``max_requests`` counts requests; what a burst costs is memory. A burst of
attaches wakes every thread of a worker at once and leaves it with tens of
MiB it no longer needs but keeps (the heap's high-water mark, pages of the
preloaded application that were written to). Each worker looks at its own
private memory every few seconds (``/proc/self/smaps_rollup``) and, above
this bound, once the burst is over (no request for 10-15 s, at random per
worker, and none being served), is replaced the same graceful way as after
``max_requests``: it stops taking connections and exits, and the master
forks a new one that shares its pages again. A worker kept busy is never
replaced for its memory (``max_requests`` still recycles it). Linux only;
elsewhere the bound is not checked.

Measured here: a new worker holds about 6 MiB of its own, 24-38 MiB in
steady use (more with PostgreSQL and many kinds of request), and 40-45 MiB
after a burst of 50-300 concurrent attaches. With 4 workers the API's
share of the memory budget of api + conductor + compute (400 MB) is about
100 MB of pages shared with the master plus 4 × this bound
(benchmarks/README.md).

Possible values:

* 0: never replace a worker for its memory.
* A positive number of MiB: what a worker may keep once quiet.

Related options:

* ``max_requests``, ``workers``
"""),
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
    cfg.FloatOpt(
        "healthcheck_timeout",
        default=2.0,
        min=0.1,
        help="""
Seconds ``GET /healthcheck`` waits for each dependency it checks (a
``SELECT 1`` on the database, a connection to the message queue) before it
reports that dependency unreachable.

Keep it below the load balancer's probe timeout, so the probe gets a 503
naming the dependency rather than no answer at all.

Related options:

* ``[healthcheck] backends``
"""),
    cfg.IntOpt(
        "keepalive",
        default=75,
        min=0,
        help="""
Seconds an idle HTTP/1.1 connection stays open between two requests
(gunicorn ``keepalive``; used by ``gthread`` workers only), for
``volumesvc-api`` and for gunicorn run with ``--config
python:volumesvc.api.gunicorn_conf`` (the systemd unit).

Keep it above every client's polling interval and below the idle timeout of
any load balancer in front of the API. openstacksdk and novaclient poll a
server's status every 2 seconds on one kept-alive connection: with a
keepalive of about that length the server closes the connection just as the
next poll is sent, and the client fails with "Remote end closed connection
without response" instead of retrying.

Possible values:

* 0: close the connection after every response.
* A positive number of seconds.

Related options:

* ``threads``
"""),
    cfg.IntOpt(
        "worker_timeout",
        default=120,
        min=0,
        help="""
Seconds a volumesvc-api worker process may stay silent to the gunicorn
master before it is killed and replaced (gunicorn ``timeout``), 0 never.

A threaded worker reports in from its main loop whatever its threads are
doing, so this bounds a stuck worker process, not a slow request.

Related options:

* ``graceful_timeout``
"""),
    cfg.ListOpt(
        "middleware",
        default=["cors", "http_proxy_to_wsgi", "healthcheck", "metrics", "requestlog",
                 "request_id", "profiler", "auth"],
        help="""
The WSGI middleware around the API, outermost first: the deployment's
equivalent of a paste pipeline (doc/source/admin/middleware.rst).

Entries: ``cors`` (oslo.middleware, ``[cors]`` options), ``http_proxy_to_wsgi``
(oslo.middleware, only for ``[api] trusted_proxies``), ``healthcheck``,
``metrics``, ``requestlog``, ``request_id``, ``profiler`` and ``auth``.
``auth`` is required. Entries that read the caller (``request_id``,
``profiler``, ``auth``) wrap only the ``/v2`` and ``/v2.1`` paths and always
sit inside the others; the order within each kind is the order listed.
Leaving an entry out switches it off (``metrics`` still needs ``[metrics]
enabled``). An unknown entry stops the API from starting.
"""),
    cfg.IntOpt(
        "graceful_timeout",
        default=30,
        min=0,
        help="""
Seconds a volumesvc-api worker that is being replaced or stopped
(``max_requests``, ``worker_private_memory_max``, SIGTERM) has to finish the
requests it holds before it is killed (gunicorn ``graceful_timeout``).

Keep systemd's ``TimeoutStopSec`` of the unit above it.

Related options:

* ``worker_timeout``, ``max_requests``
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
    # the proxy in [api] trusted_proxies.
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
