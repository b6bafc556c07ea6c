"""Options in [profiler]: osprofiler's own, for tracing one request across services.

The group and its options are osprofiler's (``enabled``, ``hmac_keys``,
``connection_string``, ``trace_requests``...), registered here on each
process's ConfigOpts as every OpenStack service does, so that they appear in
the sample file and can be set in tests. ``enabled`` is off by default.
What volumesvc traces is in ``volumesvc/common/profiler.py`` and
doc/source/admin/monitoring.rst.
"""

from osprofiler import opts as profiler_opts


def register_opts(conf):
    for group, options in profiler_opts.list_opts():
        conf.register_opts(options, group=group)


def list_opts():
    return profiler_opts.list_opts()
