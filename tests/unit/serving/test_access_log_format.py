"""The API unit's gunicorn access log carries the request id (issue 23).

The unit's command line is read the way systemd and gunicorn read it (``%%``
unescaped, gunicorn's own option parser) and one access line is rendered by
gunicorn's logger, so a format gunicorn would not expand fails here.
"""

import configparser
import datetime
import logging
import os
import shlex
import types

from gunicorn import config, glogging

from volumesvc.serving import bootstrap, server

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _unit_args():
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read(os.path.join(REPO, "etc", "systemd", "volumesvc-api.service"))
    command = parser["Service"]["ExecStart"].replace("\\\n", " ").replace("%%", "%")
    return shlex.split(command)[1:]


def test_the_unit_takes_its_settings_from_the_config_module():
    assert _unit_args()[:2] == ["--config", "python:volumesvc.serving.gunicorn_conf"]


def test_the_access_line_ends_with_the_request_id_and_the_duration():
    """The settings the unit's config module gives gunicorn, then the unit's own args."""
    conf = bootstrap.load_conf([])
    cfg = config.Config()
    for name, value in server.gunicorn_settings(conf).items():
        if name in cfg.settings:
            cfg.set(name, value)
    for name, value in vars(cfg.parser().parse_args(_unit_args())).items():
        if value is not None and name in cfg.settings and name != "config":
            cfg.set(name, value)
    logger = glogging.Logger(cfg)
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger.access_log.handlers = [handler]
    resp = types.SimpleNamespace(
        status="202 Accepted", sent=12, response_length=12,
        headers=[("Content-Type", "application/json"),
                 ("x-openstack-request-id", "req-0e5d5dbc-8f3c-4b6e-9a35-2f1b7c1e7a01")])
    req = types.SimpleNamespace(method="POST", path="/v2.1/servers/S/os-volume_attachments",
                                query="", uri="/v2.1/servers/S/os-volume_attachments",
                                version=(1, 1), headers=[("USER-AGENT", "nova")])
    environ = {"REMOTE_ADDR": "192.0.2.7", "RAW_URI": req.uri, "SERVER_PROTOCOL": "HTTP/1.1",
               "REQUEST_METHOD": "POST", "PATH_INFO": req.path, "QUERY_STRING": ""}
    logger.access(resp, req, environ, datetime.timedelta(seconds=0, microseconds=41237))
    assert len(lines) == 1, lines
    assert lines[0].startswith('192.0.2.7 - - [')
    assert '"POST /v2.1/servers/S/os-volume_attachments HTTP/1.1" 202 12' in lines[0]
    assert lines[0].endswith(" req-0e5d5dbc-8f3c-4b6e-9a35-2f1b7c1e7a01 0.041237"), lines[0]
