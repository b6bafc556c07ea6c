"""oslo.messaging plumbing shared by every RPC interface.

Nothing here is global: callers get a transport from their ConfigOpts and
hand it to the rpcapi clients and servers they build. Servers always use the
``threading`` executor (no eventlet anywhere in volumesvc).
"""

import oslo_messaging as messaging
from oslo_messaging.rpc import server as rpc_server
from oslo_serialization import jsonutils

from volumesvc import context as vs_context
from volumesvc.common import outage, profiler

# Exceptions whose module may be sent back to an RPC caller and re-raised
# there as the same class (oslo.messaging checks this list).
ALLOWED_EXMODS = ["volumesvc.exception"]


class RequestContextSerializer(messaging.Serializer):
    """Carry a volumesvc RequestContext across the bus.

    Entities are plain JSON-able dicts and lists (no versioned objects), so
    the entity part only makes sure datetimes and sets survive.
    """

    def serialize_entity(self, ctxt, entity):
        return jsonutils.to_primitive(entity, convert_instances=True)

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        values = ctxt.to_dict()
        # A traced request's trace goes with it ([profiler], common/profiler.py).
        trace = profiler.trace_info()
        if trace:
            values[profiler.TRACE_KEY] = trace
        return values

    def deserialize_context(self, ctxt):
        return vs_context.RequestContext.from_dict(ctxt)


def get_transport(conf):
    """The RPC transport named by ``transport_url`` in ``conf``."""
    return messaging.get_rpc_transport(conf, allowed_remote_exmods=ALLOWED_EXMODS)


def get_notification_transport(conf):
    return messaging.get_notification_transport(
        conf, allowed_remote_exmods=ALLOWED_EXMODS)


def get_client(transport, topic, *, version, server=None, version_cap=None,
               timeout=None):
    """An RPCClient for ``topic`` (optionally pinned to one ``server``)."""
    target = messaging.Target(topic=topic, server=server, version=version)
    return messaging.get_rpc_client(
        transport, target, version_cap=version_cap,
        serializer=RequestContextSerializer(), timeout=timeout)


def get_server(transport, topic, server, endpoints, *, version, observer=None):
    """An RPC server for ``topic`` on host ``server``.

    NOTE: oslo.messaging's default executor is ``threading`` (and passing
    ``executor`` is deprecated), which is what volumesvc wants: native threads.
    Its dispatcher sends the database being down as a type of ours
    (``outage.TypedFailureDispatcher``), whatever the endpoint raised.
    ``observer``: a ``common.metrics.ServiceMetrics`` timing every message.
    """
    target = messaging.Target(topic=topic, server=server, version=version)
    if observer is None:
        dispatcher = outage.TypedFailureDispatcher(endpoints, RequestContextSerializer())
    else:
        from volumesvc.common import metrics

        dispatcher = metrics.ObservedDispatcher(endpoints, RequestContextSerializer(), observer)
    return rpc_server.RPCServer(transport, target, dispatcher)


def get_notifier(transport, publisher_id, *, driver=None, topics=None):
    """A versioned notifier (``versioned_notifications`` topic by default)."""
    return messaging.Notifier(
        transport, publisher_id=publisher_id,
        driver=driver, topics=topics or ["versioned_notifications"],
        serializer=RequestContextSerializer())
