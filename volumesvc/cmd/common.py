"""What every volumesvc command does first: threads, config, logging."""

import sys

from oslo_log import log as logging


def use_native_threads():
    """Select oslo.service's threading backend before anything imports it.

    oslo.messaging pulls in oslo.service, whose default backend is eventlet;
    volumesvc runs on native threads only, so the choice is made explicitly
    at process start (never at import time of a library module).
    """
    from oslo_service import backend

    try:
        backend.init_backend(backend.BackendType.THREADING)
    except Exception as exc:  # BackendAlreadySelected in an embedding process
        logging.getLogger(__name__).debug("oslo.service backend: %s", exc)


def parse_config(argv=None, *, prog, cli_opts=(), default_config_files=None,
                 operator_tool=False):
    """Build the process's ConfigOpts from argv and set up logging.

    ``operator_tool``: a command whose stdout is its answer (manage, status)
    logs to stderr and keeps library chatter (alembic) at WARNING.
    """
    use_native_threads()
    from volumesvc import conf as vs_conf

    conf = vs_conf.register_all(__import__("oslo_config").cfg.ConfigOpts())
    for opt in cli_opts:
        conf.register_cli_opt(opt)
    if operator_tool:
        conf.set_default("use_stderr", True)
        logging.set_defaults(default_log_levels=logging.get_default_log_levels() + [
            "alembic=WARN", "oslo_db=WARN"])
    conf(sys.argv[1:] if argv is None else argv, project="volumesvc", prog=prog,
         default_config_files=default_config_files)
    logging.setup(conf, "volumesvc")
    return conf
