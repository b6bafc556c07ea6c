"""oslo.messaging's options, registered up front.

oslo.messaging registers its options lazily when a transport is built; our
code reads some of them (``rpc_response_timeout``) and tests override
``transport_url`` before that, so they are registered with everything else.
The sample file documents them through the ``oslo.messaging`` namespace.
"""

import importlib

import oslo_messaging.opts

# NOTE: oslo.messaging 18.x registers these only on the global cfg.CONF at
# import time, yet reads them from the ConfigOpts it was handed; a private
# ConfigOpts (no global config in volumesvc) needs them registered by hand.
# (module, attribute, group). Drop entries once oslo.messaging lists them in
# oslo_messaging.opts.
_GLOBAL_ONLY = (
    ("oslo_messaging._tracing.client", "oslo_messaging_tracing", "oslo_messaging_tracing"),
    ("oslo_messaging._metrics.client", "oslo_messaging_metrics", "oslo_messaging_metrics"),
    ("oslo_messaging.rpc.dispatcher", "_dispatcher_opts", None),
)


def _global_only_opts():
    for module_name, attr, group in _GLOBAL_ONLY:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        opts = getattr(module, attr, None)
        if opts:
            yield group, list(opts)


def register_opts(conf):
    for group, opts in oslo_messaging.opts.list_opts():
        conf.register_opts(opts, group=group)
    for group, opts in _global_only_opts():
        conf.register_opts(opts, group=group)


def list_opts():
    # Documented by the oslo.messaging generator namespace, not ours.
    return []
