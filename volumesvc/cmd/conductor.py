"""volumesvc-conductor: orchestration and persistence on behalf of computes."""

from volumesvc.cmd import common


def build_service(conf, transport=None):
    """Assemble the conductor service from ``conf`` (used by tests too)."""
    from volumesvc import rpc, service
    from volumesvc.conductor import manager
    from volumesvc.db import api as db_api
    from volumesvc.objects import service as service_obj

    db = db_api.Database(conf)
    owns_transport = transport is None
    transport = transport or rpc.get_transport(conf)
    mgr = manager.ConductorManager(conf, db=db, transport=transport)

    def heartbeat(ctx, **values):
        service_obj.heartbeat(db, ctx, **values)

    return service.RPCService(
        conf, binary="volumesvc-conductor", topic=conf.conductor.topic,
        manager=mgr, transport=transport, heartbeat=heartbeat, owns_transport=owns_transport)


def main(argv=None):
    conf = common.parse_config(argv, prog="volumesvc-conductor")
    from volumesvc import service

    service.serve(build_service(conf))
