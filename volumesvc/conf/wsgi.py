"""Options in [wsgi]: the API's server: socket, TLS, workers, timeouts, middleware.

Read by ``volumesvc/serving/``. Until the first release these were ``[api]``
options, and that group still sets them (``deprecated_group``), so existing
configuration files keep working.
"""

import copy

from oslo_config import cfg

wsgi_group = cfg.OptGroup(
    "wsgi",
    title="API server",
    help="""
The server of ``volumesvc-api`` (gunicorn, also when started as ``gunicorn
--config python:volumesvc.serving.gunicorn_conf``): where it listens, its
TLS, its worker processes and threads and their timeouts, the WSGI
middleware around the REST API and whose forwarded headers it believes.
Leave the TLS options unset when a proxy in front of the API ends TLS
(doc/source/install/tls.rst).
""")

wsgi_opts = [
    cfg.HostAddressOpt(
        "listen_host",
        deprecated_name="listen_host", deprecated_group="api",
        default="0.0.0.0",
        help="""
Address the volumesvc-api server (gunicorn) binds to.

The default takes every address of the host, so that a load balancer or
clients on other hosts reach the API; the all-in-one binds 127.0.0.1.
"""),
    cfg.PortOpt(
        "listen_port",
        deprecated_name="listen_port", deprecated_group="api",
        default=8774,
        help="TCP port the volumesvc-api server (gunicorn) listens on."),
    cfg.IntOpt(
        "workers",
        deprecated_name="workers", deprecated_group="api",
        default=2,
        min=1,
        help="""
Number of gunicorn worker processes of volumesvc-api.

Related options:

* ``listen_host``, ``listen_port``, ``threads``
"""),
    cfg.IntOpt(
        "threads",
        deprecated_name="threads", deprecated_group="api",
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
        deprecated_name="read_threads", deprecated_group="api",
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
        deprecated_name="max_requests", deprecated_group="api",
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
``--config python:volumesvc.serving.gunicorn_conf`` (the systemd unit).

Possible values:

* 0: never replace workers.
* A positive number: replace a worker after about that many requests.

Related options:

* ``max_requests_jitter``
"""),
    cfg.IntOpt(
        "max_requests_jitter",
        deprecated_name="max_requests_jitter", deprecated_group="api",
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
        deprecated_name="worker_private_memory_max", deprecated_group="api",
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
        "keepalive",
        deprecated_name="keepalive", deprecated_group="api",
        default=75,
        min=0,
        help="""
Seconds an idle HTTP/1.1 connection stays open between two requests
(gunicorn ``keepalive``; used by ``gthread`` workers only), for
``volumesvc-api`` and for gunicorn run with ``--config
python:volumesvc.serving.gunicorn_conf`` (the systemd unit).

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
        deprecated_name="worker_timeout", deprecated_group="api",
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
    cfg.IntOpt(
        "graceful_timeout",
        deprecated_name="graceful_timeout", deprecated_group="api",
        default=30,
        min=0,
        help="""
Seconds a volumesvc-api worker that is being replaced or stopped
(``max_requests``, ``worker_private_memory_max``, SIGTERM) has to finish the
requests it holds before it is killed (gunicorn ``graceful_timeout``).

Keep systemd's ``TimeoutStopSec`` of the unit above it.

Related options:

* ``worker_timeout``, ``max_requests``
"""),    cfg.ListOpt(
        "trusted_proxies",
        deprecated_name="trusted_proxies", deprecated_group="api",
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
``--config python:volumesvc.serving.gunicorn_conf`` (the systemd unit).

Related options:

* ``[oslo_middleware] enable_proxy_headers_parsing``
"""),
    cfg.FloatOpt(
        "healthcheck_timeout",
        deprecated_name="healthcheck_timeout", deprecated_group="api",
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
    cfg.ListOpt(
        "middleware",
        deprecated_name="middleware", deprecated_group="api",
        default=["cors", "http_proxy_to_wsgi", "healthcheck", "metrics", "requestlog",
                 "request_id", "profiler", "auth"],
        help="""
The WSGI middleware around the API, outermost first: the deployment's
equivalent of a paste pipeline (doc/source/admin/middleware.rst).

Entries: ``cors`` (oslo.middleware, ``[cors]`` options), ``http_proxy_to_wsgi``
(oslo.middleware, only for ``[wsgi] trusted_proxies``), ``healthcheck``,
``metrics``, ``requestlog``, ``request_id``, ``profiler`` and ``auth``.
``auth`` is required. Entries that read the caller (``request_id``,
``profiler``, ``auth``) wrap only the ``/v2`` and ``/v2.1`` paths and always
sit inside the others; the order within each kind is the order listed.
Leaving an entry out switches it off (``metrics`` still needs ``[metrics]
enabled``).

An entry ``package.module:factory`` adds the deployment's own middleware: a
paste filter factory, called once at start as ``factory(global_conf,
oslo_config_config=<this configuration>)`` and returning a callable that
wraps the app (e.g. ``keystonemiddleware.audit:filter_factory``). Listed
after ``request_id``, ``profiler`` or ``auth`` it wraps only the API paths,
inside those listed before it; otherwise it wraps everything.

An unknown entry, or one that cannot be imported or built, stops the API
from starting.

Related options:

* ``middleware_options``
"""),
    cfg.MultiStrOpt(
        "middleware_options",
        default=[],
        help="""
Options for the deployment's own middleware entries of ``middleware``, what
a paste file's filter section would hold: one ``<entry> <key>=<value>`` per
line, repeated for each option, e.g. ``keystonemiddleware.audit:filter_factory
audit_map_file=/etc/volumesvc/api_audit_map.conf``. The entry's factory gets
them as keyword arguments (strings, as paste gives them). A line for an
entry that ``middleware`` does not list, or without ``=``, stops the API
from starting.
"""),
    cfg.StrOpt(
        "ssl_cert_file",
        help="""
PEM file with the API's certificate (and the intermediate certificates a
client needs, after it). Set with ``ssl_key_file`` to serve HTTPS; the links
in the API's answers then say ``https``.

Related options:

* ``ssl_key_file``
"""),
    cfg.StrOpt(
        "ssl_key_file",
        help="""
PEM file with the private key of ``ssl_cert_file``. Readable by the API's
user only.
"""),
    cfg.StrOpt(
        "ssl_ca_file",
        help="""
PEM file of the certificate authorities whose client certificates are
accepted. When set, a client must present a certificate signed by one of
them (mutual TLS); unset, any client may connect (and authenticates with
its token as over plain HTTP).
"""),
]


def register_opts(conf):
    group = copy.deepcopy(wsgi_group)
    conf.register_group(group)
    conf.register_opts(wsgi_opts, group=group)


def list_opts():
    return [(wsgi_group, wsgi_opts)]
