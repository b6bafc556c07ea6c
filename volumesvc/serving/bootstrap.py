"""The API process's one bootstrap, whichever server hosts it.

``volumesvc-api`` (its own command line), gunicorn with
``--config python:volumesvc.serving.gunicorn_conf`` and uwsgi (or any WSGI
server) importing ``volumesvc.serving.wsgi_app`` all build the process the
same way, through ``cmd.common.parse_config``, the bootstrap of every
volumesvc process: native threads for oslo.service, the config, oslo.log,
log escaping of client-sent text and the malloc arena bound. Only where the
config comes from differs: a hosting server's command line is its own, so
only ``--config-file``/``--config-dir`` are read from it, and without them
``VOLUMESVC_CONFIG_FILE`` (default ``/etc/volumesvc/volumesvc.conf``).
"""

import os
import sys

from volumesvc import binaries
from volumesvc.cmd import common

DEFAULT_CONFIG_FILE = "/etc/volumesvc/volumesvc.conf"
CONFIG_ENV = "VOLUMESVC_CONFIG_FILE"


def config_args(argv):
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
    """The config of an API process hosted by a WSGI server (its argv not ours)."""
    argv = sys.argv[1:] if argv is None else argv
    return common.parse_config(config_args(argv), prog=binaries.API,
                               default_config_files=[])

