"""``/healthcheck``: what a load balancer probes (doc/source/admin/monitoring.rst).

oslo.middleware's ``Healthcheck`` answers the path before any token is
looked at, as Cinder, Glance and Keystone serve it: a probe needs no
credentials and never reaches Keystone. Its backends come from ``[healthcheck]
backends``; by default ``disable_by_file`` (an operator drains the node by
creating ``disable_by_file_path``) and :class:`DependenciesHealthcheck`
(registered as the ``volumesvc`` entry point of ``oslo.middleware.healthcheck``).

Details (which dependency failed and why, plus the library's threads and
platform) may name hosts and errors, so even with ``[healthcheck] detailed``
they go only to requests from ``allowed_source_ranges`` or carrying an
admin's token; everyone else gets the status and the short reasons.
"""

import ipaddress
import os
import threading
from concurrent import futures

from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase

from volumesvc.api import auth

PATH = "/healthcheck"


class _Healthcheck(healthcheck.Healthcheck):
    """The library's app with detail fixed per instance and no range filter.

    The library would pass a request from outside ``allowed_source_ranges``
    on to the API (a 300); here the ranges only decide who sees details
    (:class:`HealthApp`), so the filter of the instance itself is cleared.
    """

    def __init__(self, conf, *, detailed):
        super().__init__(None, conf)
        self._show_details = detailed
        self._source_ranges = []


class HealthApp:
    """Answer ``/healthcheck``; send every other path to ``application``."""

    def __init__(self, application, conf, enforcer):
        self.application = application
        self.summary = _Healthcheck(conf, detailed=False)
        self.detailed: _Healthcheck | None = None
        self._ranges: list = []
        if conf.healthcheck.detailed:
            self.detailed = _Healthcheck(conf, detailed=True)
            # NOTE: one set of backends (one database engine) for both answers.
            self.detailed._backends = self.summary._backends
            self._ranges = [ipaddress.ip_network(r)
                            for r in conf.healthcheck.allowed_source_ranges]
            # Admin tokens are read the way the API reads them; only requests
            # that carry a token ever go through it.
            self._with_caller = auth.wrap(self._by_caller, conf, enforcer)

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "") != PATH:
            return self.application(environ, start_response)
        detailed = self.detailed
        if detailed is None:
            return self.summary(environ, start_response)
        if self._from_allowed_range(environ.get("REMOTE_ADDR")):
            return detailed(environ, start_response)
        if environ.get("HTTP_X_AUTH_TOKEN"):
            return self._with_caller(environ, start_response)
        return self.summary(environ, start_response)

    def _from_allowed_range(self, remote):
        try:
            address = ipaddress.ip_address(remote or "")
        except ValueError:
            return False
        return any(address.version == r.version and address in r for r in self._ranges)

    def _by_caller(self, environ, start_response):
        ctx = environ.get(auth.ENV_CONTEXT)
        app = self.summary
        if ctx is not None and ctx.is_admin and self.detailed is not None:
            app = self.detailed
        return app(environ, start_response)


def wrap(application, conf, enforcer):
    return HealthApp(application, conf, enforcer)


class _Probe:
    """One dependency check run in its own thread, waited for ``timeout`` seconds.

    A check that hangs (a firewall dropping packets) keeps its thread; the
    next probe reports it still hanging instead of starting another one, so
    a dead dependency never piles up threads.
    """

    def __init__(self, name, check):
        self.name, self._check = name, check
        self._pool = futures.ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix=f"health-{name}")
        self._running = None
        self._lock = threading.Lock()

    def run(self, timeout):
        """None when reachable, else why not."""
        with self._lock:
            if self._running is None or self._running.done():
                self._running = self._pool.submit(self._check, timeout)
            running = self._running
        try:
            running.result(timeout=timeout)
        except futures.TimeoutError:
            return f"no answer within {timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - every failure is the report
            return _first_line(f"{type(exc).__name__}: {exc}")
        return None


def _first_line(text, limit=300):
    return text.strip().splitlines()[0][:limit] if text.strip() else text


class DependenciesHealthcheck(pluginbase.HealthcheckBaseExtension):
    """The ``volumesvc`` backend: the database and the message queue reachable.

    Each is checked on every probe with ``[wsgi] healthcheck_timeout``: the
    database with ``SELECT 1`` on an engine of its own, without a pool (so a
    probe never waits for connections the requests hold), the message queue by
    opening a connection through oslo.messaging's own transport, with its TLS
    and other ``[oslo_messaging_rabbit]`` settings, to the hosts of
    ``transport_url`` in turn (one answering host is enough, as oslo.messaging
    fails over between them).
    """

    def __init__(self, oslo_conf, conf):
        super().__init__(oslo_conf, conf)
        self._engine_made = None
        self._engine_lock = threading.Lock()
        self._transport_made = None
        self._transport_lock = threading.Lock()
        self._probes = [_Probe("database", self._check_database),
                        _Probe("message queue", self._check_transport)]

    def healthcheck(self, server_port):
        timeout = self.oslo_conf.wsgi.healthcheck_timeout
        failed = [(p.name, why) for p in self._probes
                  if (why := p.run(timeout)) is not None]
        if not failed:
            return pluginbase.HealthcheckResult(available=True, reason="OK")
        return pluginbase.HealthcheckResult(
            available=False,
            reason="UNREACHABLE: " + ", ".join(name for name, _ in failed),
            details="; ".join(f"{name}: {why}" for name, why in failed))

    def _engine(self, timeout):
        import sqlalchemy as sa

        with self._engine_lock:
            if self._engine_made is None:
                url = sa.engine.make_url(self.oslo_conf.database.connection)
                # NOTE: a plain engine, not oslo.db's: the facade retries its
                # first connection for [database] max_retries, which is right
                # for a service starting and wrong for a probe.
                connect_args = ({"connect_timeout": max(1, round(timeout))}
                                if url.get_backend_name() in ("postgresql", "mysql") else {})
                self._engine_made = sa.create_engine(url, poolclass=sa.pool.NullPool,
                                            connect_args=connect_args)
            return self._engine_made

    def _check_database(self, timeout):
        import sqlalchemy as sa

        engine = self._engine(timeout)
        database = engine.url.database
        if (engine.dialect.name == "sqlite" and database and database != ":memory:"
                and not os.path.exists(database)):
            # Connecting would create an empty database file.
            raise FileNotFoundError(f"no SQLite database at {database}")
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    def _transport(self):
        from volumesvc import rpc

        with self._transport_lock:
            if self._transport_made is None:
                self._transport_made = rpc.get_transport(self.oslo_conf)
            return self._transport_made

    def _check_transport(self, timeout):
        import oslo_messaging
        from oslo_messaging._drivers import common as driver_common

        url = oslo_messaging.TransportURL.parse(self.oslo_conf)
        if url.transport not in _BROKER_DRIVERS:
            # fake:// (one process) has no broker to reach.
            return
        # NOTE: a new connection made the way the RPC transport makes its own
        # (the driver's connection pool builds it from [oslo_messaging_rabbit]
        # and the URL's query: TLS, its CA and client certificate, the login
        # method, failover between the URL's hosts), not one we assemble, so
        # the probe reaches the broker exactly when RPC does. The pool's
        # pooled connections are not used: one of those would not notice a
        # broker that went away. One attempt per host (retry counts the
        # attempts after the first, each on the next host); a listening
        # connection starts no heartbeat thread.
        pool = self._transport()._driver._connection_pool
        hosts = ", ".join(f"{h.hostname}:{h.port or 5672}" for h in url.hosts) or "default host"
        try:
            connection = pool.create(purpose=driver_common.PURPOSE_LISTEN,
                                     retry=max(len(url.hosts) - 1, 0))
        except Exception as exc:  # noqa: BLE001 - reported with the hosts tried
            raise ConnectionError(
                f"no host of transport_url answered ({hosts}): {type(exc).__name__}: {exc}"
            ) from exc
        connection.close()


# The oslo.messaging drivers that talk AMQP 0-9-1 to a broker.
_BROKER_DRIVERS = ("rabbit", "kombu")
