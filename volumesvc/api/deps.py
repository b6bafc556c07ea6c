"""What API handlers depend on, built from conf or injected by tests.

The app keeps one ``Deps`` in ``app.extensions["volumesvc"]``; handlers get
it as ``req.deps`` (``api/request.py``'s ``ApiRequest``, built per request in
``api/app.py``) and ``api/policy.py`` reads its ``enforcer`` there. Anything
not passed to the constructor is created lazily on first use, so a test that
only exercises version documents never opens a database, and a test can
pass fakes for the conductor or Cinder instead of patching modules by dotted
path.
"""

import threading


class Deps:
    """Container of the API's collaborators.

    ``db``: ``volumesvc.db.api.Database``; ``conductor``: the conductor
    rpcapi client; ``compute``: the compute rpcapi client, for the reads a
    compute answers alone (console output); ``cinder``/``glance``: the adapters of
    ``volumesvc.volume.cinder`` / ``volumesvc.image.glance``. The enforcer is
    set by ``api.app.create_api``.
    """

    def __init__(self, conf, *, db=None, conductor=None, cinder=None, glance=None,
                 enforcer=None, compute=None):
        self.conf = conf
        self._given = {"db": db, "conductor": conductor, "cinder": cinder, "glance": glance,
                       "volume_types": None, "compute": compute}
        self._lock = threading.Lock()
        self.enforcer = enforcer

    # NOTE: the factories import their modules locally on purpose: the
    # database engine, oslo.messaging and cinderclient/glance stay unloaded
    # until a request needs them (version documents and most tests never do).
    def _lazy(self, name, factory):
        # NOTE: workers run several threads (gthread): build each dependency
        # once, under a lock, not once per racing request.
        if self._given[name] is None:
            with self._lock:
                if self._given[name] is None:
                    self._given[name] = factory()
        return self._given[name]

    @property
    def db(self):
        def build():
            from volumesvc.db import api as db_api

            return db_api.Database(self.conf)
        return self._lazy("db", build)

    @property
    def conductor(self):
        def build():
            from volumesvc import rpc
            from volumesvc.conductor import rpcapi

            return rpcapi.ConductorAPI(self.conf, rpc.get_transport(self.conf))
        return self._lazy("conductor", build)

    @property
    def compute(self):
        def build():
            from volumesvc import context, rpc
            from volumesvc.compute import rpcapi
            from volumesvc.objects import service as service_obj

            cap = service_obj.compute_rpc_version_cap(self.conf, self.db,
                                                      context.get_admin_context())
            return rpcapi.ComputeAPI(self.conf, rpc.get_transport(self.conf),
                                     auto_version_cap=cap)
        return self._lazy("compute", build)

    @property
    def cinder(self):
        def build():
            from volumesvc.volume import cinder

            return cinder.CinderAPI(self.conf)
        return self._lazy("cinder", build)

    @property
    def glance(self):
        def build():
            from volumesvc.image import glance

            return glance.GlanceAPI(self.conf)
        return self._lazy("glance", build)

    @property
    def volume_types(self):
        """Cinder's volume types, reused briefly (``api/volume_types.py``)."""
        # NOTE: the adapter first: _lazy's lock is not re-entrant, and building
        # it inside build() would wait for the lock build() is holding.
        cinder = self.cinder

        def build():
            from volumesvc.api import volume_types

            return volume_types.VolumeTypes(self.conf, cinder)
        return self._lazy("volume_types", build)
