"""Tracing with osprofiler, where ``[profiler] enabled`` (off by default).

Why a module of its own: a trace crosses every volumesvc process, and each
crossing needs one small piece here:

* the API wraps ``/v2...`` in osprofiler's WSGI middleware (:func:`wrap`),
  which starts a trace for a request signed with one of ``[profiler]
  hmac_keys`` (``openstack --os-profile KEY ...``);
* a traced RPC message carries the trace (``trace_info`` next to the
  context, :func:`trace_info`), and the receiving conductor or compute
  continues it around the handler (:func:`rpc_span`);
* the compute's Cinder and virt driver calls are spans of their own
  (``common/metrics.Timed`` opens :func:`span`), and with ``[profiler]
  trace_requests`` every HTTP request made through ``requests`` is one too.

Spans go where ``[profiler] connection_string`` says (``messaging://``: to
RabbitMQ, on the ``profiler`` topic of ``transport_url``; or any other
osprofiler driver). osprofiler keeps the trace of a thread and the notifier
of a process in module state; volumesvc sets the notifier once per process
(:func:`init`) and cleans a thread's trace after each message.
"""

import contextlib

from osprofiler import profiler

from volumesvc import binaries

# What a traced RPC message carries next to the context.
TRACE_KEY = "trace_info"


def init(conf, binary) -> bool:
    """Send this process's spans to ``[profiler] connection_string``; False when off."""
    if not conf.profiler.enabled:
        return False
    from osprofiler import initializer

    initializer.init_from_conf(conf, context={}, project="volumesvc", service=binary,
                               host=conf.host)
    return True


def wrap(application, conf):
    """The API app under osprofiler's WSGI middleware (unchanged when tracing is off)."""
    if not init(conf, binaries.API):
        return application
    from osprofiler import web

    return web.WsgiMiddleware(application, hmac_keys=conf.profiler.hmac_keys, enabled=True)


def trace_info() -> dict | None:
    """The current thread's trace as an RPC message carries it, or None (not traced)."""
    current = profiler.get()
    if current is None:
        return None
    return {"hmac_key": current.hmac_key, "base_id": current.get_base_id(),
            "parent_id": current.get_id()}


@contextlib.contextmanager
def rpc_span(ctxt: dict, method: str, kind: str):
    """Continue the trace ``ctxt`` carries (if any) around one RPC handler.

    The trace is the thread's until the handler returns, and cleared then:
    the thread serves other messages next.
    """
    info = ctxt.get(TRACE_KEY) if isinstance(ctxt, dict) else None
    if not info:
        yield
        return
    profiler.init(info["hmac_key"], base_id=info["base_id"], parent_id=info["parent_id"])
    try:
        with profiler.Trace("rpc", info={"method": method, "kind": kind}):
            yield
    finally:
        profiler.clean()


def span(name: str, call: str):
    """A span ``name`` (cinder, libvirt) for one ``call``, when this thread is traced."""
    if profiler.get() is None:
        return contextlib.nullcontext()
    return profiler.Trace(name, info={"call": call})
