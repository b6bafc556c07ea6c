"""Configuration: every option volumesvc reads is declared in this package.

There is no global ``CONF``. Each process builds its own ``cfg.ConfigOpts``
with :func:`get_conf` (or :func:`register_all` on one it was given) and passes
it down through constructors, so tests can run several differently
configured services in one interpreter.
"""

from oslo_config import cfg

from volumesvc.conf import opts


def register_all(conf: cfg.ConfigOpts) -> cfg.ConfigOpts:
    """Register every volumesvc option group (and library groups) on ``conf``."""
    for module in opts.option_modules():
        module.register_opts(conf)
    return conf


def get_conf(args=None, default_config_files=None, project="volumesvc",
             prog=None) -> cfg.ConfigOpts:
    """Build, register and parse a fresh ConfigOpts.

    ``args=[]`` with ``default_config_files=[]`` gives pure defaults, which is
    what tests want before they override options.
    """
    conf = cfg.ConfigOpts()
    register_all(conf)
    conf(args if args is not None else [], project=project, prog=prog,
         default_config_files=default_config_files)
    return conf
