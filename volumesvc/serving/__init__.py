"""Serving the REST API: what turns ``volumesvc/api/`` into a running process.

The one bootstrap (``bootstrap.py``: config, logging, native threads), the
WSGI application factory with its ordered middleware (``app.py``), the
middleware that is not the Compute API (``health.py``, ``metrics.py``,
``requestlog.py``) and the gunicorn server (``server.py``, its config module
``gunicorn_conf.py`` and ``wsgi_app.py`` for uwsgi). ``volumesvc/api/``
knows nothing of these; they wrap it. Options: ``[wsgi]``.
"""
