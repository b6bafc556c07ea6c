"""volumesvc-conductor: orchestration and persistence on behalf of computes."""

from volumesvc import binaries
from volumesvc.cmd import common


def build_service(conf, transport=None, *, cinder=None, glance=None):
    """Assemble the conductor service from ``conf`` (tests inject fakes here)."""
    from volumesvc import context, rpc, service
    from volumesvc.common import metrics
    from volumesvc.compute import rpcapi as compute_rpcapi
    from volumesvc.conductor import manager
    from volumesvc.db import api as db_api
    from volumesvc.objects import service as service_obj

    db = db_api.Database(conf)
    owns_transport = transport is None
    transport = transport or rpc.get_transport(conf)
    if cinder is None:
        from volumesvc.volume import cinder as cinder_api

        cinder = cinder_api.CinderAPI(conf)
    if glance is None:
        from volumesvc.image import glance as glance_api

        glance = glance_api.GlanceAPI(conf)
    mgr = manager.ConductorManager(
        conf, db=db, compute_rpcapi=compute_rpcapi.ComputeAPI(
            conf, transport, auto_version_cap=service_obj.compute_rpc_version_cap(
                conf, db, context.get_admin_context())),
        cinder=cinder, glance=glance)

    def heartbeat(ctx, **values):
        service_obj.heartbeat(db, ctx, **values)

    from volumesvc.conductor import rpcapi as conductor_rpcapi

    service_metrics = metrics.ServiceMetrics()
    pacing = getattr(cinder, "pacing", None)  # the real adapter's; test doubles have none
    if pacing is not None:
        pacing.register_metrics(service_metrics.registry)
    return service.RPCService(
        conf, binary=binaries.CONDUCTOR, topic=conf.conductor.topic,
        manager=mgr, transport=transport, heartbeat=heartbeat, owns_transport=owns_transport,
        extra_topics=(conductor_rpcapi.persistence_topic(conf),),
        metrics=service_metrics, metrics_address=(
            (conf.metrics.conductor_listen_host, conf.metrics.conductor_listen_port)
            if conf.metrics.enabled else None))


def warn_about_settings(conf):
    """Log what makes this database unfit for the conductors that share it."""
    from volumesvc.cmd import checks

    try:
        findings = checks.shared_database_findings(conf)
    except Exception as exc:  # noqa: BLE001 - no schema yet: the service start says so
        checks.LOG.debug("Service records unreadable: %s", exc)
        return
    checks.warn(findings, binaries.CONDUCTOR)


def main(argv=None):
    conf = common.parse_config(argv, prog=binaries.CONDUCTOR)
    from volumesvc import service
    from volumesvc.common import profiler

    profiler.init(conf, binaries.CONDUCTOR)

    warn_about_settings(conf)
    service.serve(build_service(conf))
