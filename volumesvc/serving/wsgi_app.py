"""The API as a module-level WSGI application: ``volumesvc.serving.wsgi_app:application``.

For WSGI servers that look an attribute up in a module rather than call a
factory: uwsgi's ``--module volumesvc.serving.wsgi_app:application`` reads
the module's dictionary directly. Importing this module is what builds the
application, from ``VOLUMESVC_CONFIG_FILE`` (default
``/etc/volumesvc/volumesvc.conf``), so nothing else imports it; code that
wants an app calls :func:`volumesvc.serving.app.init_application`, as
gunicorn does with ``'volumesvc.serving.app:init_application()'``.
"""

from volumesvc.serving import app

application = app.init_application()
