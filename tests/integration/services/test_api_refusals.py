"""volumesvc-api under real gunicorn: its own refusals are Nova faults, logs stay one line each.

gunicorn refuses some requests before the app sees them (serving/gunicorn_workers.py);
both worker kinds (``[wsgi] threads`` 1 = sync, more = gthread) must answer
those as JSON faults. A decoded ``%0a`` in a path must never start a log line.
"""

import json
import socket
import urllib.request

import pytest

import volumesvc_aio as harness


def _send(api, raw: bytes):
    """(status, headers, body bytes) of one raw HTTP/1.1 exchange."""
    host, port = api.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


@pytest.fixture(params=[1, 4], ids=["sync", "gthread"])
def api(request, make_deployment):
    made = make_deployment(f"threads = {request.param}\n", start=("volumesvc-api",))
    harness.wait_for(lambda: urllib.request.urlopen(made.api, timeout=5).status == 200,
                     timeout=60, what="the API", children=list(made.children.values()))
    return made


@pytest.mark.parametrize("raw,status,fault", [
    (b"GET /v2.1/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "overLimit"),
    (b"GET /v2.1/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431,
     "overLimit"),
    (b"GET /v2.1/ HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "badRequest"),
], ids=["uri-too-long", "header-too-large", "malformed-header"])
def test_gunicorn_refusals_are_json_faults(api, raw, status, fault):
    got, headers, body = _send(api.api, raw)
    assert got == status, (got, headers, body)
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert list(payload) == [fault] and payload[fault]["code"] == status, payload


def test_a_newline_in_a_path_never_starts_a_log_line(api):
    status, _, body = _send(api.api, b"GET /v2.1/servers/x%0aFORGED-RECORD HTTP/1.1\r\n"
                            b"Host: x\r\nX-Auth-Token: admin:admin\r\n"
                            b"Connection: close\r\n\r\n")
    assert status == 404, body
    log = api.children["volumesvc-api"].tail(400)
    assert "\\nFORGED-RECORD" in log, log
    assert not [line for line in log.splitlines() if line.startswith("FORGED-RECORD")], log
