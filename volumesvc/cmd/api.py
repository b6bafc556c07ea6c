"""volumesvc-api: serve the compute API with gunicorn (development and aio).

Production deployments run ``gunicorn --config
python:volumesvc.serving.gunicorn_conf`` or uwsgi from a systemd unit
instead; this command reads the same config and builds the process the same
way (``cmd.common.parse_config``, see ``volumesvc/serving/bootstrap.py``).
"""

from volumesvc import binaries
from volumesvc.cmd import common


def main(argv=None):
    conf = common.parse_config(argv, prog=binaries.API)
    from volumesvc.serving import server

    server.serve(conf)
