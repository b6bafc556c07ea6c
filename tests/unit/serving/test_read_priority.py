"""The thread worker tells reads from writes by peeking at the request line.

``request_kind`` must never consume what it looks at (gunicorn's parser
reads the request afterwards) and must say "not yet" rather than guess
when too little has arrived.
"""

import socket

import pytest

from volumesvc.conf import get_conf
from volumesvc.serving import gunicorn_workers as gw
from volumesvc.serving import server as gunicorn_server


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


@pytest.mark.parametrize("sent,kind", [
    (b"GET /v2.1/servers HTTP/1.1\r\n", gw.READ),
    (b"HEAD / HTTP/1.1\r\n", gw.READ),
    (b"POST /v2.1/servers/x/os-volume_attachments HTTP/1.1\r\n", gw.WRITE),
    (b"DELETE /v2.1/servers/x HTTP/1.1\r\n", gw.WRITE),
    (b"GETX / HTTP/1.1\r\n", gw.WRITE),
    (b"\x16\x03\x01\x02\x00", gw.WRITE),  # a TLS ClientHello
    (b"GE", None),  # the method is not complete yet
    (b"HEA", None),
])
def test_kind_from_the_first_bytes_without_consuming_them(pair, sent, kind):
    server, client = pair
    client.sendall(sent)
    assert gw.request_kind(server) == kind
    assert server.recv(100) == sent  # still all there for gunicorn's parser


def test_nothing_sent_yet_is_not_yet(pair):
    server, _ = pair
    assert gw.request_kind(server) is None


def test_closed_connection_takes_the_ordinary_path(pair):
    server, client = pair
    client.close()
    assert gw.request_kind(server) == gw.WRITE


def test_volumesvc_api_runs_the_worker_with_read_threads_from_config():
    conf = get_conf(default_config_files=[])
    worker = gunicorn_server.gunicorn_settings(conf)["worker_class"]
    assert issubclass(worker, gw.ThreadWorker)
    # the class a gunicorn command line names carries the option's default
    assert worker.read_threads == gw.ThreadWorker.read_threads == conf.wsgi.read_threads == 8
    conf.set_override("read_threads", 0, group="wsgi")
    assert gunicorn_server.gunicorn_settings(conf)["worker_class"].read_threads == 0
