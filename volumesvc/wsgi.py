"""WSGI entry points of volumesvc-api: for gunicorn/uwsgi, and a gunicorn runner.

``gunicorn 'volumesvc.wsgi:init_application()'`` (or uwsgi's
``--module volumesvc.wsgi:application`` after calling it) builds the config
from ``--config-file`` / ``VOLUMESVC_CONFIG_FILE``, sets up oslo.log and
returns the app. :func:`serve` is what ``volumesvc-api`` calls; it runs the
same app under gunicorn sync workers, never the werkzeug dev server.
"""

import os
import sys

from oslo_log import log as logging

DEFAULT_CONFIG_FILE = "/etc/volumesvc/volumesvc.conf"
CONFIG_ENV = "VOLUMESVC_CONFIG_FILE"


def _config_args(argv):
    """Only our ``--config-file``/``--config-dir`` args: servers pass their own."""
    args = []
    it = iter(argv)
    for arg in it:
        if arg in ("--config-file", "--config-dir"):
            args += [arg, next(it, "")]
        elif arg.startswith(("--config-file=", "--config-dir=")):
            args.append(arg)
    if not args:
        path = os.environ.get(CONFIG_ENV, DEFAULT_CONFIG_FILE)
        if os.path.exists(path):
            args = ["--config-file", path]
    return args


def load_conf(argv=None):
    from volumesvc.conf import get_conf

    argv = sys.argv[1:] if argv is None else argv
    conf = get_conf(_config_args(argv), default_config_files=[], prog="volumesvc-api")
    logging.setup(conf, "volumesvc")
    return conf


def init_application(conf=None):
    """Return the API WSGI application (build config first unless given)."""
    from volumesvc.api.app import create_app

    return create_app(conf if conf is not None else load_conf())


def serve(conf):
    """Run the API on ``[api] listen_host:listen_port`` with gunicorn workers."""
    from gunicorn.app.base import BaseApplication

    class _Server(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"{conf.api.listen_host}:{conf.api.listen_port}")
            self.cfg.set("workers", conf.api.workers)
            self.cfg.set("worker_class", "sync")
            self.cfg.set("proc_name", "volumesvc-api")

        def load(self):
            return init_application(conf)

    _Server().run()
