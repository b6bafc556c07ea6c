"""volumesvc-compute: the per-hypervisor agent (no database credentials)."""

from volumesvc import binaries
from volumesvc.cmd import common


def build_service(conf, transport=None, *, driver=None, cinder=None, notifier=None,
                  glance=None, keys=None):
    """Assemble the compute service from ``conf`` (tests inject fakes here)."""
    from volumesvc import rpc, service, virt
    from volumesvc.compute import manager
    from volumesvc.compute import metrics as compute_metrics
    from volumesvc.compute import rpcapi as compute_rpcapi
    from volumesvc.conductor import rpcapi as conductor_rpcapi

    owns_transport = transport is None
    transport = transport or rpc.get_transport(conf)
    conductor = conductor_rpcapi.ConductorAPI(conf, transport)
    if cinder is None:
        from volumesvc.volume import cinder as cinder_api

        cinder = cinder_api.CinderAPI(conf)
    if glance is None:
        from volumesvc.image import glance as glance_api

        glance = glance_api.GlanceAPI(conf)
    if notifier is None:
        from volumesvc.notifications import base as notifications

        notifier = notifications.get_notifier(conf, f"{binaries.COMPUTE}:{conf.host}")
    metrics = compute_metrics.ComputeMetrics()
    pacing = getattr(cinder, "pacing", None)  # the real adapter's; test doubles have none
    if pacing is not None:
        pacing.register_metrics(metrics.registry)
    mgr = manager.ComputeManager(
        conf, driver=metrics.timed_driver(driver or virt.load_driver(conf)),
        conductor=conductor, cinder=metrics.timed_cinder(cinder), notifier=notifier,
        glance=glance, metrics=metrics, keys=keys,
        # NOTE: a compute has no database to read the computes' versions from
        # (``auto``): the conductor only sends a move to hosts new enough for it.
        peers=compute_rpcapi.ComputeAPI(conf, transport, auto_version_cap=None))

    def heartbeat(ctx, **values):
        conductor.service_update(ctx, **values)

    return service.RPCService(
        conf, binary=binaries.COMPUTE, topic=conf.compute.topic,
        manager=mgr, transport=transport, heartbeat=heartbeat,
        capabilities=mgr.capabilities, owns_transport=owns_transport, metrics=metrics,
        metrics_address=((conf.metrics.compute_listen_host, conf.metrics.compute_listen_port)
                         if conf.metrics.enabled else None))


def main(argv=None):
    conf = common.parse_config(argv, prog=binaries.COMPUTE)
    from volumesvc import service
    from volumesvc.cmd import checks
    from volumesvc.common import profiler

    profiler.init(conf, binaries.COMPUTE)
    checks.warn(checks.compute_findings(conf), binaries.COMPUTE)

    service.serve(build_service(conf))
