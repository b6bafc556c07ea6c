"""Options in [metrics]: the API's Prometheus metrics (doc/source/admin/monitoring.rst)."""

import copy

from oslo_config import cfg

metrics_group = cfg.OptGroup(
    "metrics",
    title="Metrics options",
    help="Prometheus metrics of volumesvc-api (request latency, in-flight requests, "
         "worker replacements), volumesvc-conductor and volumesvc-compute (RPC handling, "
         "volume operations, Cinder and libvirt calls).")



def _listen_opts(service, port, note):
    """``<service>_listen_host`` and ``<service>_listen_port`` of volumesvc-<service>."""
    return [
        cfg.HostAddressOpt(
            f"{service}_listen_host",
            default="127.0.0.1",
            help=f"Address volumesvc-{service} serves its metrics on (``GET /metrics``) "
                 "when ``enabled``."),
        cfg.PortOpt(
            f"{service}_listen_port",
            default=port,
            help=f"Port volumesvc-{service} serves its metrics on when ``enabled``. {note}"),
    ]


metrics_opts = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help="""
Serve the API's metrics in the Prometheus text format at ``path`` on the
API's own address and port, without authentication; volumesvc-conductor and
volumesvc-compute serve theirs on a port of their own
(``conductor_listen_port``, ``compute_listen_port``).

They describe the API (routes, request counts and latencies, worker
replacements), not any tenant's resources; still, expose the path only to
the monitoring network (filter it at the load balancer).

Related options:

* ``path``, ``multiprocess_dir``, ``conductor_listen_port``,
  ``compute_listen_port``
"""),
    cfg.StrOpt(
        "path",
        default="/metrics",
        help="""
URL path of the metrics on the API's port, starting with ``/``. It must not
be a path of the Compute API (``/v2...``) nor ``/healthcheck``.
"""),
    cfg.StrOpt(
        "multiprocess_dir",
        help="""
Directory where each volumesvc-api worker process writes its metrics, so
that a scrape answered by any worker adds up all of them (prometheus_client's
multiprocess mode). ``volumesvc-api`` empties it when it starts. Unset:
``$state_path/api-metrics``.

Related options:

* ``enabled``
"""),
    *_listen_opts("conductor", 9780, "Two conductors on one machine need two ports."),
    *_listen_opts("compute", 9781, "Two computes on one machine (the all-in-one's extra "
                  "hosts) need two ports."),
]


def register_opts(conf):
    conf.register_group(copy.deepcopy(metrics_group))
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return [(metrics_group, metrics_opts)]
