"""gunicorn's configuration from ``[api]``.

Run as ``gunicorn --config python:volumesvc.api.gunicorn_conf``.

The systemd unit runs gunicorn with this module instead of repeating
workers, threads, bind, keep-alive and timeouts on its command line, so the
unit and ``volumesvc-api`` cannot disagree. gunicorn imports it once, in
the master, before it loads the application: the config file is
``VOLUMESVC_CONFIG_FILE`` (default ``/etc/volumesvc/volumesvc.conf``), as
for the application itself. Options on gunicorn's command line still win.
"""

from volumesvc import wsgi
from volumesvc.api import metrics

_conf = wsgi.load_conf([])
# Before the application (and prometheus_client) is imported.
metrics.prepare_multiprocess(_conf)
globals().update(wsgi.gunicorn_settings(_conf))
wsgi_app = "volumesvc.wsgi_app:application"
wsgi.install_gunicorn_logsafe()


def when_ready(server):
    """gunicorn hook: the preloaded app is in the master, no worker forked yet."""
    wsgi.freeze_for_fork()
