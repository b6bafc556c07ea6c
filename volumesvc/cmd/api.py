"""volumesvc-api: serve the compute API with gunicorn (development and aio).

Production deployments run ``gunicorn 'volumesvc.wsgi:init_application()'``
or uwsgi from a systemd unit instead; this command reads the same config.
"""

from volumesvc import binaries
from volumesvc.cmd import common


def main(argv=None):
    conf = common.parse_config(argv, prog=binaries.API)
    from volumesvc import wsgi

    wsgi.serve(conf)
