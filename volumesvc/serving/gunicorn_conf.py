"""gunicorn's configuration from ``[wsgi]``.

Run as ``gunicorn --config python:volumesvc.serving.gunicorn_conf``.

The systemd unit runs gunicorn with this module instead of repeating
workers, threads, bind, keep-alive and timeouts on its command line, so the
unit and ``volumesvc-api`` cannot disagree. gunicorn imports it once, in
the master, before it loads the application: the config file is
``VOLUMESVC_CONFIG_FILE`` (default ``/etc/volumesvc/volumesvc.conf``), as
for the application itself. Options on gunicorn's command line still win.
"""

from volumesvc.serving import bootstrap, metrics, server

_conf = bootstrap.load_conf([])
# Before the application (and prometheus_client) is imported.
metrics.prepare_multiprocess(_conf)
globals().update(server.gunicorn_settings(_conf))
wsgi_app = "volumesvc.serving.wsgi_app:application"
server.install_gunicorn_logsafe()


def when_ready(server_):
    """gunicorn hook: the preloaded app is in the master, no worker forked yet."""
    server.freeze_for_fork()
