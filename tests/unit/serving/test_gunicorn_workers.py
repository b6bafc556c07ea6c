"""gunicorn's own refusals leave as Nova faults (through gunicorn's real handle_error)."""

import json

import pytest
from gunicorn import config
from gunicorn.glogging import Logger
from gunicorn.http import errors as http_errors

from volumesvc.serving import gunicorn_workers


class _Socket:
    def __init__(self):
        self.sent = b""
        self.timeout = 1.0

    def gettimeout(self):
        return self.timeout

    def setblocking(self, flag):
        self.timeout = None if flag else 0.0

    def sendall(self, data):
        self.sent += data


def _worker(klass):
    cfg = config.Config()
    return klass(0, 0, [], None, 30, cfg, Logger(cfg))


def _response(raw: bytes):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.mark.parametrize("klass", [gunicorn_workers.SyncWorker, gunicorn_workers.ThreadWorker])
@pytest.mark.parametrize("exc,status,fault", [
    (http_errors.LimitRequestLine(9000, 4094), 414, "overLimit"),
    (http_errors.LimitRequestHeaders("Request Header Fields Too Large"), 431, "overLimit"),
    (http_errors.InvalidHeader("Bad<script>\nheader"), 400, "badRequest"),
    (http_errors.InvalidRequestLine("GET /<b>"), 400, "badRequest"),
])
def test_refusals_are_json_faults(klass, exc, status, fault):
    sock = _Socket()
    _worker(klass).handle_error(None, sock, ("127.0.0.1", 1), exc)
    got_status, headers, body = _response(sock.sent)
    assert got_status == status
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(sock.sent.partition(b"\r\n\r\n")[2])
    assert list(body) == [fault]
    assert body[fault]["code"] == status
    assert "\n" not in body[fault]["message"] and "<" not in body[fault]["message"][:1]


def test_an_unrecognised_page_is_passed_on_unchanged():
    assert gunicorn_workers.fault_response(b"garbage") is None
