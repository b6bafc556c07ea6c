"""Experiment only: the API app loaded once in the gunicorn master (``--preload``).

``attach_storm --api-preload`` runs ``gunicorn --preload
benchmarks.lib.storm_preload_app:application`` instead of ``volumesvc-api``
to measure what sharing the imported code between the sync workers would
save in PSS. The collaborators (database engine, RPC transport,
Cinder/Glance sessions) stay lazy (``api/deps.py``), so no socket is opened before the
fork; only their modules are imported here. The config comes from
``$VOLUMESVC_CONFIG_FILE``.
"""

import gc

# The modules Deps imports on first use: import them before the fork.
import oslo_messaging  # noqa: F401
import psycopg2  # noqa: F401

from volumesvc import rpc, wsgi  # noqa: F401
from volumesvc.conductor import rpcapi  # noqa: F401
from volumesvc.db import api as db_api  # noqa: F401
from volumesvc.image import glance  # noqa: F401
from volumesvc.volume import cinder  # noqa: F401

application = wsgi.init_application()
# Keep the collector from touching (and so un-sharing) every preloaded object.
gc.freeze()
