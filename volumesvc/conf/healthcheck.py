"""Options in [healthcheck]: oslo.middleware's health check at ``/healthcheck``.

The group and its options are oslo.middleware's own (``detailed``,
``backends``, ``allowed_source_ranges``, ``disable_by_file_path``...); they
are registered here, up front, as the middleware itself would register them,
so that they can be set in tests and appear in the sample file. What
volumesvc adds is a default list of backends: the drain file and the
``volumesvc`` backend (database and message queue reachable), and a drain
file under ``state_path``, see
``volumesvc/serving/health.py`` and doc/source/admin/monitoring.rst.
"""

from oslo_middleware.healthcheck import opts as hc_opts

GROUP = "healthcheck"
DEFAULT_BACKENDS = ["disable_by_file", "volumesvc"]
DEFAULT_DISABLE_FILE = "$state_path/healthcheck_disable"
_OPTS = hc_opts.HEALTHCHECK_OPTS + hc_opts.DISABLE_BY_FILE_OPTS


def register_opts(conf):
    conf.register_opts(_OPTS, group=GROUP)
    # NOTE: per ConfigOpts (set_default), never on the library's shared
    # option objects: another ConfigOpts in this process keeps the library's
    # own default.
    conf.set_default("backends", DEFAULT_BACKENDS, group=GROUP)
    # A drain file always has a path (the library warns on every probe
    # without one); deployments and the all-in-one set their own.
    conf.set_default("disable_by_file_path", DEFAULT_DISABLE_FILE, group=GROUP)


def list_opts():
    return [(GROUP, _OPTS)]
