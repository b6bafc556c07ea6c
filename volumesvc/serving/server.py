"""The gunicorn server of volumesvc-api: its settings from ``[wsgi]``, and a runner.

:func:`serve` is what ``volumesvc-api`` calls; it runs the app of
:func:`volumesvc.serving.app.init_application` under gunicorn workers, never
the werkzeug dev server. gunicorn's settings come from ``[wsgi]``
(:func:`gunicorn_settings`), also for a gunicorn started with ``--config
python:volumesvc.serving.gunicorn_conf``.
"""

import logging as std_logging
import ssl

from volumesvc import binaries, logsafe

# gunicorn's access line (its combined format) followed by the request id the
# API answered with and the duration in seconds, so that an access line can be
# matched with the API's request log line and with the conductor's and
# compute's lines of the same request.
ACCESS_LOG_FORMAT = ('%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" '
                     '%({x-openstack-request-id}o)s %(L)s')


def _preimport():
    """Import what ``api/deps.py`` builds lazily, without building it.

    With ``preload_app`` the workers then share these modules' pages with the
    master instead of importing them once each; no connection or socket is
    made here, so nothing crosses the fork.
    """
    import oslo_messaging  # noqa: F401

    from volumesvc import rpc  # noqa: F401
    from volumesvc.conductor import rpcapi  # noqa: F401
    from volumesvc.db import api as db_api  # noqa: F401
    from volumesvc.image import glance  # noqa: F401
    from volumesvc.volume import cinder  # noqa: F401


def install_gunicorn_logsafe():
    """gunicorn's own loggers quote request lines it refused: make them safe too."""
    for name in ("gunicorn.error", "gunicorn.access"):
        logsafe.install(std_logging.getLogger(name))


def freeze_for_fork():
    """In the master, once the app is loaded and before workers fork."""
    import gc

    _preimport()
    # NOTE: keep the collector from writing to (and so un-sharing) every
    # object the workers inherit.
    gc.freeze()


def gunicorn_settings(conf):
    """The gunicorn settings ``volumesvc-api`` runs with, from ``[wsgi]``.

    The app is loaded once in the master (``preload_app``) and the workers
    share its pages: about 170 MB less PSS with 4 workers
    (benchmarks/attach_storm.py --api-preload). Workers are replaced after
    ``[wsgi] max_requests`` (plus jitter) so that what a burst made them
    write is given back (see the option). gunicorn's control socket is off:
    its default path is shared by every gunicorn on the machine.
    Forwarded headers count only from ``[wsgi] trusted_proxies``, and from
    nobody while proxy-header parsing is off (gunicorn's own default trusts
    loopback).
    """
    from volumesvc.serving.app import trusted_proxy_networks

    settings = {
        "bind": f"{conf.wsgi.listen_host}:{conf.wsgi.listen_port}",
        "workers": conf.wsgi.workers,
        "proc_name": binaries.API,
        "preload_app": True,
        "control_socket_disable": True,
        "max_requests": conf.wsgi.max_requests,
        "max_requests_jitter": conf.wsgi.max_requests_jitter,
        "timeout": conf.wsgi.worker_timeout,
        "graceful_timeout": conf.wsgi.graceful_timeout,
        "keepalive": conf.wsgi.keepalive,
        "forwarded_allow_ips": ",".join(str(n) for n in trusted_proxy_networks(conf)),
        "access_log_format": ACCESS_LOG_FORMAT,
    }
    if conf.wsgi.threads > 1:
        from volumesvc.serving import gunicorn_workers

        settings.update(worker_class=gunicorn_workers.thread_worker(
                            conf.wsgi.read_threads, conf.wsgi.worker_private_memory_max),
                        threads=conf.wsgi.threads)
    else:
        settings["worker_class"] = "volumesvc.serving.gunicorn_workers.SyncWorker"
    if conf.metrics.enabled:
        from volumesvc.serving import metrics

        settings["child_exit"] = metrics.child_exit
    settings.update(tls_settings(conf))
    return settings


def tls_settings(conf) -> dict:
    """gunicorn's TLS settings from ``[wsgi]``; none for plain HTTP.

    Raises ValueError for half a configuration (a certificate without its
    key, or the reverse, or a client CA without either), which would
    otherwise serve plain HTTP where the operator asked for HTTPS.
    """
    cert, key, ca = conf.wsgi.ssl_cert_file, conf.wsgi.ssl_key_file, conf.wsgi.ssl_ca_file
    if not (cert or key or ca):
        return {}
    if not (cert and key):
        raise ValueError("[wsgi] ssl_cert_file and ssl_key_file must be set together "
                         "(and ssl_ca_file only with them)")
    settings = {"certfile": cert, "keyfile": key}
    if ca:
        settings.update(ca_certs=ca, cert_reqs=ssl.CERT_REQUIRED)
    return settings


def serve(conf):
    """Run the API on ``[wsgi] listen_host:listen_port`` with gunicorn workers."""
    from volumesvc.serving import metrics

    # Before the app (and prometheus_client) is loaded and workers fork.
    metrics.prepare_multiprocess(conf)

    from gunicorn.app.base import BaseApplication

    from volumesvc.serving import app

    class _Server(BaseApplication):
        def load_config(self):
            for name, value in gunicorn_settings(conf).items():
                self.cfg.set(name, value)

        def load(self):
            install_gunicorn_logsafe()
            application = app.init_application(conf)
            freeze_for_fork()
            return application

    _Server().run()
