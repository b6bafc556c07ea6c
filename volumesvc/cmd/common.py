"""What every volumesvc command does first: threads, config, logging."""

import ctypes
import ctypes.util
import sys

from oslo_config import cfg
from oslo_log import log as logging

from volumesvc import logsafe


def use_native_threads():
    """Select oslo.service's threading backend before anything imports it.

    oslo.messaging pulls in oslo.service, whose default backend is eventlet;
    volumesvc runs on native threads only, so the choice is made explicitly
    at process start (never at import time of a library module).

    A backend that cannot be loaded stops the command: swallowed, oslo.service
    would quietly fall back to eventlet at its first use (as it did while
    cotyledon, which the threading backend imports, was not installed).
    """
    from oslo_service import backend
    from oslo_service.backend import exceptions as backend_exceptions

    try:
        backend.init_backend(backend.BackendType.THREADING)
    except backend_exceptions.BackendAlreadySelected as exc:
        # An embedding process chose first; its choice stands.
        logging.getLogger(__name__).debug("oslo.service backend: %s", exc)
    except (ImportError, ValueError) as exc:
        raise RuntimeError(
            "oslo.service's threading backend cannot be loaded (it needs "
            f"oslo.service[threading], which installs cotyledon): {exc}") from exc


# glibc's mallopt() parameter number for M_ARENA_MAX (malloc.h).
_M_ARENA_MAX = -8


def limit_malloc_arenas(conf):
    """Apply ``[DEFAULT] malloc_arena_max`` to this process (glibc only).

    It has to happen before the process starts threads: arenas already made
    stay. Children forked later (gunicorn workers) inherit the setting.
    """
    if not conf.malloc_arena_max:
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        applied = libc.mallopt(_M_ARENA_MAX, conf.malloc_arena_max) == 1
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        applied = False
    if not applied:
        logging.getLogger(__name__).debug("malloc_arena_max not applied on this libc")


def parse_config(argv=None, *, prog, cli_opts=(), default_config_files=None,
                 operator_tool=False):
    """Build the process's ConfigOpts from argv and set up logging.

    ``operator_tool``: a command whose stdout is its answer (manage, status)
    logs to stderr and keeps library chatter (alembic) at WARNING.
    """
    use_native_threads()
    from volumesvc import conf as vs_conf

    conf = vs_conf.register_all(cfg.ConfigOpts())
    for opt in cli_opts:
        conf.register_cli_opt(opt)
    if operator_tool:
        conf.set_default("use_stderr", True)
        logging.set_defaults(default_log_levels=logging.get_default_log_levels() + [
            "alembic=WARN", "oslo_db=WARN"])
    conf(sys.argv[1:] if argv is None else argv, project="volumesvc", prog=prog,
         default_config_files=default_config_files)
    logging.setup(conf, "volumesvc")
    # Conductor and compute log values that came from API requests too.
    logsafe.install()
    limit_malloc_arenas(conf)
    return conf
